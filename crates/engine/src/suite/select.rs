//! Which cases a suite runs: a filter expression over name, path, world
//! and tags (`-k` in pytest's spirit). (Which share of them one machine
//! runs is a [`Partition`](worldline_case::partition::Partition).)
//!
//! Filter grammar: `and`, `or`, `not` and parentheses over terms. A term
//! is `tag:T`, `world:W`, `path:P` or `name:N`, where the value may use `*`
//! and `?` globs (matched by `world::glob_match`, the one glob matcher); a
//! bare word matches when it is a substring of the case's name, without
//! regard to case as in pytest (a term's glob is matched as written). Words are
//! separated by spaces; a stretch in double quotes is part of one word
//! whatever it holds (`tag:"needs review"`), and a word with one is never
//! an operator. `and` binds tighter than `or`.

use worldline_case::world::glob_match;

/// What a filter term looks at.
#[derive(Debug, Clone, PartialEq)]
enum Field {
    Name,
    Path,
    World,
    Tag,
}

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    /// A bare word: substring of the name, without regard to case.
    Word(String),
    /// `field:glob`.
    Term(Field, String),
    Not(Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
}

/// A parsed `--filter` expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Filter(Expr);

/// What a filter sees of a case.
pub struct Candidate<'a> {
    /// Its name in reports (`b/x` where another case is also `x`).
    pub name: &'a str,
    /// Its file's stem (`x`): `-k name:x` still selects both.
    pub short: &'a str,
    /// Its file's path relative to the working folder when inside it.
    pub path: &'a str,
    /// Its file's path as it was found (absolute, from the project file).
    pub given: &'a str,
    pub world: &'a str,
    pub tags: &'a [String],
}

/// The fewest edits that turn `word` into some stretch of `text` (of its
/// length, one more or one less), when that is few enough to be a typo:
/// at most a third of the word, and at least one.
fn typo_distance(word: &str, text: &str) -> Option<usize> {
    let w: Vec<char> = word.to_lowercase().chars().collect();
    let t: Vec<char> = text.to_lowercase().chars().collect();
    if w.is_empty() {
        return None;
    }
    let allowed = (w.len() / 3).max(1);
    let mut best = usize::MAX;
    for len in w.len().saturating_sub(1).max(1)..=w.len() + 1 {
        if len > t.len() {
            best = best.min(strsim::generic_damerau_levenshtein(&w, &t));
            break;
        }
        for window in t.windows(len) {
            best = best.min(strsim::generic_damerau_levenshtein(&w, window));
        }
    }
    (best <= allowed).then_some(best)
}

impl Expr {
    /// The terms a case must match to be selected: every term not under a
    /// `not` (`None` for a bare word).
    fn wanted<'a>(&'a self, out: &mut Vec<(Option<&'a Field>, &'a str)>) {
        match self {
            Expr::Word(w) => out.push((None, w)),
            Expr::Term(f, g) => out.push((Some(f), g)),
            Expr::Not(_) => {}
            Expr::And(a, b) | Expr::Or(a, b) => {
                a.wanted(out);
                b.wanted(out);
            }
        }
    }

    fn matches(&self, c: &Candidate) -> bool {
        match self {
            // Without regard to case, as pytest's `-k` (5.4 on) matches.
            Expr::Word(w) => c.name.to_lowercase().contains(&w.to_lowercase()),
            Expr::Term(Field::Name, g) => glob_match(g, c.name) || glob_match(g, c.short),
            Expr::Term(Field::Path, g) => glob_match(g, c.path) || glob_match(g, c.given),
            Expr::Term(Field::World, g) => glob_match(g, c.world),
            Expr::Term(Field::Tag, g) => c.tags.iter().any(|t| glob_match(g, t)),
            Expr::Not(e) => !e.matches(c),
            Expr::And(a, b) => a.matches(c) && b.matches(c),
            Expr::Or(a, b) => a.matches(c) || b.matches(c),
        }
    }
}

impl Filter {
    pub fn matches(&self, c: &Candidate) -> bool {
        self.0.matches(c)
    }

    /// When the filter selects nothing: what its terms may have meant,
    /// written as filter terms (`incident/stale-deploys`, `tag:slow`),
    /// nearest first, at most `max`. A term is near a value when it is
    /// a few edits from some part of it (a typo of a substring).
    pub fn near(&self, cases: &[Candidate], max: usize) -> Vec<String> {
        let mut wanted = Vec::new();
        self.0.wanted(&mut wanted);
        let mut scored: Vec<(usize, String)> = Vec::new();
        for (field, value) in wanted {
            let plain: String = value.chars().filter(|c| !matches!(c, '*' | '?')).collect();
            let mut pool = std::collections::BTreeSet::new();
            for c in cases {
                match field {
                    None | Some(Field::Name) => pool.insert(c.name.to_string()),
                    Some(Field::Path) => pool.insert(c.path.to_string()),
                    Some(Field::World) => pool.insert(c.world.to_string()),
                    Some(Field::Tag) => {
                        c.tags.iter().for_each(|t| {
                            pool.insert(t.clone());
                        });
                        false
                    }
                };
            }
            let prefix = match field {
                None | Some(Field::Name) => "",
                Some(Field::Path) => "path:",
                Some(Field::World) => "world:",
                Some(Field::Tag) => "tag:",
            };
            for v in pool {
                if let Some(d) = typo_distance(&plain, &v) {
                    scored.push((d, format!("{prefix}{}", as_written(&v))));
                }
            }
        }
        scored.sort();
        let mut out: Vec<String> = Vec::new();
        for (_, s) in scored {
            if !out.contains(&s) && out.len() < max {
                out.push(s);
            }
        }
        out
    }

    /// Parse an expression; the error says what was expected where.
    pub fn parse(text: &str) -> Result<Filter, String> {
        let tokens = tokenize(text)?;
        if tokens.is_empty() {
            return Err("the filter is empty".into());
        }
        let terms = tokens
            .iter()
            .filter(|t| t.quoted || !matches!(t.text.as_str(), "(" | ")" | "and" | "or" | "not"))
            .count();
        if terms > MAX_TERMS {
            return Err(format!(
                "the filter has {terms} terms; at most {MAX_TERMS} are read: select by a shared tag or path instead"
            ));
        }
        let mut p = Parser {
            tokens,
            at: 0,
            depth: 0,
        };
        let e = p.or()?;
        match p.tokens.get(p.at) {
            None => Ok(Filter(e)),
            Some(t) => Err(format!("unexpected `{}` (word {})", t.text, p.at + 1)),
        }
    }
}

/// A word of a filter: `(`, `)`, an operator or a term.
#[derive(Default)]
struct Token {
    text: String,
    /// It had a stretch in double quotes: a term, whatever its text.
    quoted: bool,
}

/// A filter's words: `(`, `)` and what spaces separate, a stretch in
/// double quotes kept whole (a tag or a case named with a space).
fn tokenize(text: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut word = Token::default();
    let mut chars = text.chars();
    let end = |word: &mut Token, out: &mut Vec<Token>| {
        if !word.text.is_empty() || word.quoted {
            out.push(std::mem::take(word));
        }
    };
    while let Some(ch) = chars.next() {
        if ch == '"' {
            word.quoted = true;
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some(c) => word.text.push(c),
                    None => return Err("a `\"` is not closed".into()),
                }
            }
        } else if ch == '(' || ch == ')' || ch.is_whitespace() {
            end(&mut word, &mut out);
            if !ch.is_whitespace() {
                out.push(Token {
                    text: ch.to_string(),
                    quoted: false,
                });
            }
        } else {
            word.text.push(ch);
        }
    }
    end(&mut word, &mut out);
    Ok(out)
}

/// `value` as a filter names it: in quotes when it holds a space or a
/// parenthesis, or is an operator's word.
fn as_written(value: &str) -> String {
    let plain = !value.is_empty()
        && !matches!(value, "and" | "or" | "not")
        && !value
            .chars()
            .any(|c| c == '(' || c == ')' || c.is_whitespace());
    if plain {
        value.to_string()
    } else {
        format!("\"{value}\"")
    }
}

/// The most terms a filter may hold, and the deepest it may nest (`(`
/// and `not`): the parse, the match and the drop of a filter recurse
/// through it, and a filter past these would overflow the stack.
const MAX_TERMS: usize = 1_000;
const MAX_DEPTH: usize = 100;

struct Parser {
    tokens: Vec<Token>,
    at: usize,
    /// `(` and `not` open around the word at `at`.
    depth: usize,
}

impl Parser {
    /// The word at `at` when it may be an operator or a parenthesis (it
    /// has no quotes).
    fn peek(&self) -> Option<&str> {
        self.tokens
            .get(self.at)
            .filter(|t| !t.quoted)
            .map(|t| t.text.as_str())
    }

    fn or(&mut self) -> Result<Expr, String> {
        let mut e = self.and()?;
        while self.peek() == Some("or") {
            self.at += 1;
            e = Expr::Or(Box::new(e), Box::new(self.and()?));
        }
        Ok(e)
    }

    fn and(&mut self) -> Result<Expr, String> {
        let mut e = self.not()?;
        while self.peek() == Some("and") {
            self.at += 1;
            e = Expr::And(Box::new(e), Box::new(self.not()?));
        }
        Ok(e)
    }

    fn not(&mut self) -> Result<Expr, String> {
        if self.peek() == Some("not") {
            self.at += 1;
            let e = self.nested(Self::not)?;
            return Ok(Expr::Not(Box::new(e)));
        }
        self.atom()
    }

    /// `parse` one level deeper, refused past [`MAX_DEPTH`].
    fn nested(&mut self, parse: fn(&mut Self) -> Result<Expr, String>) -> Result<Expr, String> {
        if self.depth == MAX_DEPTH {
            return Err(format!(
                "the filter nests `(` and `not` more than {MAX_DEPTH} deep (word {})",
                self.at
            ));
        }
        self.depth += 1;
        let e = parse(self);
        self.depth -= 1;
        e
    }

    fn atom(&mut self) -> Result<Expr, String> {
        let at = self.at + 1;
        let Some(Token { text: t, quoted }) = self.tokens.get(self.at) else {
            return Err("the filter ends where a term was expected".into());
        };
        let (t, quoted) = (t.clone(), *quoted);
        self.at += 1;
        if t.is_empty() {
            return Err(format!(
                "word {at} is empty quotes; quote a name or a value"
            ));
        }
        match (quoted, t.as_str()) {
            (false, "(") => {
                let e = self.nested(Self::or)?;
                if self.peek() != Some(")") {
                    return Err(format!("`(` at word {at} is not closed"));
                }
                self.at += 1;
                Ok(e)
            }
            (false, ")" | "and" | "or") => {
                Err(format!("unexpected `{t}` (word {at}); a term was expected"))
            }
            _ => match t.split_once(':') {
                Some((field, value)) => {
                    let field = match field {
                        "name" => Field::Name,
                        "path" => Field::Path,
                        "world" => Field::World,
                        "tag" => Field::Tag,
                        other => {
                            return Err(format!(
                                "`{other}:` is not a filter field; use name:, path:, world: or tag:"
                            ));
                        }
                    };
                    if value.is_empty() {
                        return Err(format!("`{t}` has no value"));
                    }
                    Ok(Expr::Term(field, value.to_string()))
                }
                None => Ok(Expr::Word(t)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case<'a>(name: &'a str, tags: &'a [String]) -> Candidate<'a> {
        Candidate {
            name,
            short: name.rsplit('/').next().unwrap_or(name),
            path: "cases/incident/x.toml",
            given: "/p/cases/incident/x.toml",
            world: "incident@v4",
            tags,
        }
    }

    #[test]
    fn filters_combine_words_fields_and_operators() {
        let tags = vec!["slow".to_string(), "model".to_string()];
        let c = case("incident/stale-deploys", &tags);
        let yes = |f: &str| Filter::parse(f).unwrap().matches(&c);
        assert!(yes("stale"));
        assert!(!yes("fresh"));
        assert!(yes("tag:slow and world:incident@*"));
        assert!(yes("not tag:fast"));
        assert!(yes("fresh or (stale and not tag:fast)"));
        assert!(!yes("stale and not tag:model"));
        assert!(yes("name:incident/* and path:cases/*"));
        assert!(yes("path:/p/cases/*"));
        assert!(!yes("not stale or tag:fast"), "not binds tighter than or");
    }

    #[test]
    fn a_filter_that_selects_nothing_names_what_it_may_have_meant() {
        let tags = vec!["slow".to_string()];
        let none: Vec<String> = Vec::new();
        let cases = [
            case("incident/stale-deploys", &tags),
            case("incident/fresh-deploys", &none),
            case("billing/refund", &none),
        ];
        let near = |f: &str| Filter::parse(f).unwrap().near(&cases, 5);
        assert_eq!(near("stlae"), ["incident/stale-deploys"]);
        assert_eq!(near("refnud and not tag:x"), ["billing/refund"]);
        assert_eq!(near("tag:slwo"), ["tag:slow"]);
        assert_eq!(
            near("deplyos"),
            ["incident/fresh-deploys", "incident/stale-deploys"]
        );
        assert!(near("zzzzzzzz").is_empty());
    }

    #[test]
    fn bad_filters_say_what_is_wrong() {
        let err = |f: &str| Filter::parse(f).unwrap_err();
        assert_eq!(err(""), "the filter is empty");
        assert_eq!(err("a and"), "the filter ends where a term was expected");
        assert_eq!(err("(a or b"), "`(` at word 1 is not closed");
        assert_eq!(err("a b"), "unexpected `b` (word 2)");
        assert_eq!(
            err("colour:red"),
            "`colour:` is not a filter field; use name:, path:, world: or tag:"
        );
        assert_eq!(err("or a"), "unexpected `or` (word 1); a term was expected");
    }

    #[test]
    fn a_quoted_stretch_is_one_word_and_never_an_operator() {
        let tags = vec!["needs review".to_string(), "and".to_string()];
        let c = case("my case (old)", &tags);
        let yes = |f: &str| Filter::parse(f).unwrap().matches(&c);
        // Once a tag with a space could be chosen by a glob alone.
        assert!(yes(r#"tag:"needs review""#));
        assert!(yes(r#"tag:needs" "review"#));
        assert!(yes(r#""my case (old)" and tag:"and""#));
        assert!(!yes(r#""and""#));
        assert!(!yes(r#"tag:"needs" or "nothing like it""#));
        let err = |f: &str| Filter::parse(f).unwrap_err();
        assert_eq!(err(r#"tag:"needs review"#), "a `\"` is not closed");
        assert_eq!(
            err(r#"a or """#),
            "word 3 is empty quotes; quote a name or a value"
        );
        assert_eq!(
            Filter::parse("tag:needs-reveiw").unwrap().near(&[c], 3),
            [r#"tag:"needs review""#]
        );
    }

    #[test]
    fn a_filter_too_deep_or_too_long_is_refused_not_overflowing_the_stack() {
        let deep = format!("{}a{}", "(".repeat(20_000), ")".repeat(20_000));
        assert_eq!(
            Filter::parse(&deep).unwrap_err(),
            "the filter nests `(` and `not` more than 100 deep (word 101)"
        );
        let nots = format!("{}a", "not ".repeat(101));
        assert!(
            Filter::parse(&nots)
                .unwrap_err()
                .contains("more than 100 deep")
        );
        let long = vec!["a"; 1_001].join(" or ");
        assert_eq!(
            Filter::parse(&long).unwrap_err(),
            "the filter has 1001 terms; at most 1000 are read: select by a shared tag or path instead"
        );
        let fine = format!("{}a{}", "(".repeat(100), ")".repeat(100));
        assert!(Filter::parse(&fine).is_ok());
        assert!(Filter::parse(&vec!["a"; 1_000].join(" or ")).is_ok());
    }
}
