//! Permissions: which tool calls a world (or a case) allows, denies or
//! asks about, as tool names or globs.

use super::tools::Tool;
use serde::Deserialize;

/// Which calls are allowed: rules are tool names or globs (`ticket.*`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Permissions {
    #[serde(default)]
    pub default: Access,
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
    /// Tools allowed only after the case's `[[approve]]` rules approve the
    /// call (the host asks them before the call runs).
    #[serde(default)]
    pub ask: Vec<String>,
}

/// What a permission table grants a call no rule names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    #[default]
    Allow,
    Deny,
}

impl Permissions {
    /// A fork's permission edit: a rule for `tool` that replaces any rule
    /// written exactly so (a deny rule still wins over it: [`decide`]).
    ///
    /// [`decide`]: Self::decide
    pub fn set(&mut self, tool: &str, allow: bool) {
        self.allow.retain(|t| t != tool);
        self.deny.retain(|t| t != tool);
        if allow {
            self.allow.push(tool.to_string())
        } else {
            self.deny.push(tool.to_string())
        }
    }

    /// Whether a call of `name` goes through: these rules (a case's) first,
    /// then `world`'s, then the world's default.
    pub fn allow_over(&self, world: &Permissions, name: &str) -> bool {
        self.decide(name)
            .or_else(|| world.decide(name))
            .unwrap_or(world.default == Access::Allow)
    }

    /// `Some(true/false)` when a rule here decides; `None` when none matches.
    pub fn decide(&self, name: &str) -> Option<bool> {
        if self.deny.iter().any(|g| glob_match(g, name)) {
            Some(false)
        } else if self.allow.iter().any(|g| glob_match(g, name)) {
            Some(true)
        } else {
            None
        }
    }
}

/// Permission names of the world-file interface (`worldline:agent/files`).
pub const FILE_PERMISSIONS: [&str; 3] = ["files.read", "files.write", "files.paths"];

/// Whether a name or glob matches any of `tools`.
pub fn names_a_tool(glob: &str, tools: &[Tool]) -> bool {
    tools.iter().any(|t| glob_match(glob, &t.name))
}

impl Permissions {
    /// The first rule that names neither a tool nor a world-file permission
    /// (a typo that would otherwise silently never match).
    pub fn rule_naming_nothing(&self, tools: &[Tool]) -> Option<&String> {
        self.allow
            .iter()
            .chain(&self.deny)
            .chain(&self.ask)
            .find(|rule| {
                !names_a_tool(rule, tools) && !FILE_PERMISSIONS.iter().any(|f| glob_match(rule, f))
            })
    }
}

/// `*` matches any run of characters, `?` any one character. Matching is
/// linear in the text for any pattern (the `wildmatch` crate), so a
/// pattern of many stars cannot stall a run. A pattern without either is
/// the name itself, compared as such (a fuzz campaign asks once a call).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    if !pattern.contains(['*', '?']) {
        return pattern == text;
    }
    wildmatch::WildMatch::new(pattern).matches(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_names() {
        assert!(glob_match("ticket.*", "ticket.close"));
        assert!(glob_match("*", "anything"));
        assert!(glob_match("close_?", "close_a"));
        assert!(!glob_match("ticket.*", "alert.get"));
        assert!(glob_match("close", "close"));
        assert!(!glob_match("close", "close_a"));
        assert!(!glob_match("close_a", "close"));
        assert!(glob_match("", ""));
        assert!(!glob_match("", "a"));
    }

    #[test]
    fn many_stars_match_in_linear_time() {
        // A backtracking matcher takes minutes on these (issue 17).
        let stars = format!("{}x", "*".repeat(40));
        assert!(!glob_match(&stars, &"a".repeat(200)));
        let alternating = format!("{}b", "*a".repeat(30));
        assert!(!glob_match(&alternating, &"a".repeat(60)));
        assert!(glob_match(&alternating, &format!("{}b", "a".repeat(60))));
    }
}
