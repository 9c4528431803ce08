//! The keyboard help `?` opens on every page: the keys of `assets/keys.js`
//! as data, rendered as a dialog.

use maud::{Markup, html};

/// (where, key, what it does), in the order the help lists them.
const KEYS: &[(&str, &str, &str)] = &[
    ("anywhere", "?", "show or hide this help"),
    ("anywhere", "Esc", "close this help"),
    (
        "anywhere",
        "/",
        "the runs' text filter (a run's search, on a run page)",
    ),
    ("anywhere", "d", "diff (with the parent run, on a run page)"),
    ("anywhere", "Ctrl+Enter", "submit the text box's form"),
    ("lists", "j / ↓", "next row"),
    ("lists", "k / ↑", "previous row"),
    ("lists", "Enter / o", "open the row"),
    ("run page", "r", "show or hide the runtime's own events"),
    ("run or event page", "m / M", "next / previous model call"),
    ("event page", "j / →", "next event"),
    ("event page", "k / ←", "previous event"),
    ("event page", "n / p", "next / previous tool call"),
    ("event page", "f", "the fork form"),
];

/// The hidden dialog `?` shows.
pub(crate) fn help() -> Markup {
    html! {
        div #help hidden role="dialog" aria-label="keyboard help" {
            h2 { "Keys" }
            table {
                thead { tr { th { "where" } th { "key" } th { "does" } } }
                tbody {
                    @for (at, key, what) in KEYS {
                        tr { td { (at) } td { kbd { (key) } } td { (what) } }
                    }
                }
            }
            p.keys { "Esc or ? closes" }
        }
    }
}
