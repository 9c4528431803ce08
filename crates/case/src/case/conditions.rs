//! The conditions of one `where` entry of a check: a value (equality), or
//! a table of operators (`{ gt = 100, lt = 200, ignore_case = true }`),
//! where `all_of` / `any_of` hold lists of such conditions, so one field
//! can take the same operator several times
//! (`{ all_of = [{ contains = "rent" }, { contains = "april" }] }`) or
//! alternatives (`{ any_of = [{ word = "iphone" }, { word = "spotify" }] }`).
//! `similar` takes a table (`{ similar = { text = "...", min_ratio = 0.95 } }`),
//! checked here.
//!
//! Why row picks, OR groups, condition lists and whole words (was decision
//! 0147): they are AgentDojo's checks as written (first subject containing
//! rent, last transaction, a or b or c, several contains on one field, word in
//! split()). Arrays as operator values (`contains = [..]`) would clash with
//! equality against arrays; a general expression language is more to learn and
//! to check.

use crate::world::compare::{Equality, Op, similar_to};
use serde_json::Value;

/// One condition on a field's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Cond<'a> {
    Op(Op, &'a Value),
    /// Every one of these holds.
    All(Vec<Conditions<'a>>),
    /// At least one of these holds.
    Any(Vec<Conditions<'a>>),
}

/// The conditions of a `where` entry (all must hold), and whether text
/// compares without regard to case.
#[derive(Debug, Clone, PartialEq)]
pub struct Conditions<'a> {
    pub conds: Vec<Cond<'a>>,
    pub ignore_case: bool,
}

const GROUPS: [&str; 2] = ["all_of", "any_of"];

/// The one key of a `where` entry's table, when it is one edit from an
/// operator's name (`gtt`, `lte_`, `eqq`; three characters or more): the
/// table, taken as a value to compare with, made a check that a typo
/// decided (`{ gtt = 5 }` equal to that table: `count = 0` always held).
/// What to say of it, when so; a table of more keys is a value.
pub fn misspelt_operator(spec: &Value) -> Option<String> {
    let Value::Object(m) = spec else {
        return None;
    };
    if m.len() != 1 {
        return None;
    }
    let names = Op::ALL
        .iter()
        .map(|(n, _)| *n)
        .chain(GROUPS)
        .chain(["ignore_case"]);
    let names: Vec<&str> = names.collect();
    m.keys().filter(|k| k.len() >= 3 && !names.contains(&k.as_str())).find_map(|k| {
        let near = names.iter().find(|n| strsim::levenshtein(k, n) == 1)?;
        Some(format!(
            "`{k}` is no operator (`{near}`?); to compare with a table as it is, write {{ eq = {{ ... }} }}"
        ))
    })
}

/// The conditions of one `where` entry: a table of operators (and
/// `all_of`/`any_of` lists of conditions) or, for any other value, equality.
pub fn conditions(spec: &Value) -> Result<Conditions<'_>, String> {
    let equal = |spec| {
        Ok(Conditions {
            conds: vec![Cond::Op(Op::Eq, spec)],
            ignore_case: false,
        })
    };
    let Value::Object(m) = spec else {
        return equal(spec);
    };
    let is_key = |k: &str| k == "ignore_case" || GROUPS.contains(&k) || Op::named(k).is_some();
    if m.is_empty() || !m.keys().any(|k| is_key(k)) {
        return equal(spec);
    }
    if let Some(k) = m.keys().find(|k| !is_key(k)) {
        let names: Vec<&str> = Op::ALL.iter().map(|(n, _)| *n).collect();
        return Err(format!(
            "unknown operator `{k}` (operators: {}, all_of, any_of, ignore_case; to compare with a table, write {{ eq = {{ ... }} }})",
            names.join(", ")
        ));
    }
    let ignore_case = match m.get("ignore_case") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => return Err(format!("ignore_case must be true or false, found {other}")),
    };
    let mut conds = Vec::new();
    for (k, v) in m {
        if let Some(op) = Op::named(k) {
            if op == Op::Similar {
                similar_to(v)?;
            }
            conds.push(Cond::Op(op, v));
        } else if GROUPS.contains(&k.as_str()) {
            let Value::Array(items) = v else {
                return Err(format!("{k} takes a list of conditions, found {v}"));
            };
            if items.is_empty() {
                return Err(format!("{k} = [] holds no condition"));
            }
            let group = items
                .iter()
                .map(conditions)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|m| format!("{k}: {m}"))?;
            conds.push(if k == "all_of" {
                Cond::All(group)
            } else {
                Cond::Any(group)
            });
        }
    }
    if conds.is_empty() {
        return Err("ignore_case needs an operator beside it (eq, ne, ...)".into());
    }
    Ok(Conditions { conds, ignore_case })
}

impl Conditions<'_> {
    /// Whether `field` meets every condition (`ignore_case` from outside,
    /// the check's, adds to the entry's own).
    pub fn hold(&self, field: &Value, ignore_case: bool, eq: Equality) -> bool {
        let ignore_case = ignore_case || self.ignore_case;
        self.conds.iter().all(|c| match c {
            Cond::Op(op, v) => op.holds_with(field, v, ignore_case, eq),
            Cond::All(group) => group.iter().all(|g| g.hold(field, ignore_case, eq)),
            Cond::Any(group) => group.iter().any(|g| g.hold(field, ignore_case, eq)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn holds(spec: Value, field: Value) -> bool {
        conditions(&spec)
            .unwrap()
            .hold(&field, false, Equality::default())
    }

    #[test]
    fn an_operator_one_edit_away_is_a_typo_not_a_table_to_compare_with() {
        let said = misspelt_operator(&json!({"gtt": 5})).unwrap();
        assert!(said.starts_with("`gtt` is no operator (`gt`?)"), "{said}");
        assert!(misspelt_operator(&json!({"eqq": 1})).is_some());
        // A table of fields, an operator and an unrelated value are not.
        assert_eq!(misspelt_operator(&json!({"city": "Oslo", "zip": 1})), None);
        assert_eq!(misspelt_operator(&json!({"gt": 5})), None);
        assert_eq!(misspelt_operator(&json!({"at": "2026-03-01"})), None);
        assert_eq!(misspelt_operator(&json!("gtt")), None);
    }

    #[test]
    fn one_field_takes_an_operator_several_times_and_alternatives() {
        let both =
            json!({"all_of": [{"contains": "rent"}, {"contains": "april"}], "ignore_case": true});
        assert!(holds(both.clone(), json!("Rent for April")));
        assert!(!holds(both, json!("Rent for May")));
        let any = json!({"any_of": [{"word": "iphone"}, {"word": "spotify"}, "Netflix"]});
        assert!(holds(any.clone(), json!("spotify premium")));
        assert!(holds(any.clone(), json!("Netflix")));
        assert!(!holds(any, json!("iphones")));
        assert!(holds(json!({"gt": 1, "lt": 3}), json!(2)));
        assert!(holds(json!({"a": 1}), json!({"a": 1.0})));
        assert_eq!(
            conditions(&json!({"any_of": []})).unwrap_err(),
            "any_of = [] holds no condition"
        );
        let like = json!({"similar": {"text": "Hi Sara, see you", "min_ratio": 0.95}});
        assert!(holds(like.clone(), json!(" Hi Sara, see you!\n")));
        assert!(!holds(like.clone(), json!("Hi Sarah, see you!")));
        assert!(!holds(like, json!(["Hi Sara, see you"])));
        assert_eq!(
            conditions(&json!({"similar": {"text": "x", "min_ratio": 2}})).unwrap_err(),
            "similar takes { text = \"...\", min_ratio = 0.95 }: min_ratio 2 is not between 0 and 1"
        );
        assert!(
            conditions(&json!({"similar": "x"}))
                .unwrap_err()
                .starts_with("similar takes")
        );
        assert!(
            conditions(&json!({"all_of": [{"gt": 1, "like": 1}]}))
                .unwrap_err()
                .starts_with("all_of: unknown operator `like`")
        );
    }
}
