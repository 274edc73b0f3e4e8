//! Where in a TOML file a deserialisation error lies, for messages that name the line and the field
//! (`line 9, field `vehicle.goal.position``) where the toml crate points at a whole table: serde reports an
//! unknown or mistyped key of a tagged table (a sensor's `[pattern]`, a mission's `[[vehicle.goal]]`) against
//! the table's header. Sensor models and missions share it.

/// A parse error's place and the parser's message.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Place {
    /// Dotted path of the field (`pattern.columns`), or empty when it could not be found.
    pub field: String,
    /// Line in the TOML text, 1-based; 0 when unknown.
    pub line: usize,
    /// The parser's message.
    pub message: String,
}

impl Place {
    /// `"{what}, line N, field `f`: message"`, leaving out what is unknown.
    pub fn describe(&self, what: &str) -> String {
        describe(what, &self.field, self.line, &self.message)
    }
}

/// [`Place::describe`] of its parts (a sensor's parse error keeps them apart).
pub(crate) fn describe(what: &str, field: &str, line: usize, message: &str) -> String {
    let mut text = String::from(what);
    if line > 0 {
        text.push_str(&format!(", line {line}"));
    }
    if !field.is_empty() {
        text.push_str(&format!(", field `{field}`"));
    }
    text.push_str(": ");
    text.push_str(message.trim());
    text
}

/// Where a TOML deserialisation error lies: the dotted field path recovered from the error's span (the key on the
/// line it points at and the table header above it) or from the field serde names in its message (`missing field
/// `x``), and the line.
pub(crate) fn place_of(text: &str, error: &toml::de::Error) -> Place {
    // serde's words for a tagged table's variant without fields (a `land` goal, column firing).
    let message = error.message().trim().replace(
        ", there are no fields",
        ", this table takes no keys besides its kind",
    );
    let named = backticked_name(&message);
    let Some(span) = error.span() else {
        return Place {
            field: named.unwrap_or_default(),
            line: 0,
            message,
        };
    };
    let start = span.start.min(text.len());
    let before = text.get(..start).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line_text = text
        .get(line_start..)
        .and_then(|rest| rest.lines().next())
        .unwrap_or("");
    let table = enclosing_table(text.get(..line_start).unwrap_or(""), line_text);
    let key = line_text
        .split_once('=')
        .map(|(key, _)| key.trim().trim_matches('"').to_string())
        .filter(|key| !key.is_empty() && !key.starts_with('['));
    if key.is_none()
        && let Some((field, below)) =
            key_holding_value(text.get(line_start..).unwrap_or(""), &table, &message)
    {
        return Place {
            field,
            line: line + below,
            message,
        };
    }
    // A span on a `key = value` line names the key; a message naming a field (missing, unknown) names it inside
    // the table the span points into.
    let leaf = if message.starts_with("missing field") || message.starts_with("unknown field") {
        named.or(key)
    } else {
        key.or(named)
    };
    let field = match (table.is_empty(), leaf) {
        (_, None) => table,
        (true, Some(leaf)) => leaf,
        (false, Some(leaf)) => format!("{table}.{leaf}"),
    };
    Place {
        field,
        line,
        message,
    }
}

/// The dotted name of the table a line belongs to: the line itself when it is a `[header]`, else the last header
/// above it.
fn enclosing_table(before: &str, line_text: &str) -> String {
    let header = |line: &str| {
        let line = line.trim();
        line.strip_prefix('[')
            .and_then(|rest| rest.split(']').next())
            .map(|name| name.trim_matches(['[', ' ']).to_string())
    };
    if let Some(own) = header(line_text) {
        return own;
    }
    before.lines().rev().find_map(header).unwrap_or_default()
}

fn backticked_name(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let len = message.get(start..)?.find('`')?;
    message.get(start..start + len).map(str::to_string)
}

/// Inside a tagged table serde reports errors against the whole table; the field is recovered by finding the one
/// `key = value` line in that table (or its sub-tables) whose value is the one the message quotes (`invalid type:
/// string "x"`), or whose key is the unknown field it names. Returns the dotted path and how many lines below
/// the table header it is.
fn key_holding_value(from_table: &str, table: &str, message: &str) -> Option<(String, usize)> {
    // (the key wanted, the value wanted): one of the two is known.
    let (want_key, want_value) = if let Some(rest) = message.strip_prefix("unknown field ") {
        (Some(backticked_name(rest)?), None)
    } else {
        let rest = message
            .strip_prefix("invalid type: ")
            .or_else(|| message.strip_prefix("invalid value: "))?;
        let unexpected = rest.split(", expected").next()?;
        let needle = if let Some(string) = unexpected.strip_prefix("string ") {
            string.to_string()
        } else {
            backticked_name(unexpected)?
        };
        (None, Some(needle))
    };
    let mut current = table.to_string();
    let mut found = Vec::new();
    for (index, line) in from_table.lines().enumerate() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            let name = enclosing_table("", trimmed);
            // The next element of an array of tables (`[[vehicle.goal]]`) is another table.
            let next_element = index > 0 && trimmed.starts_with("[[") && name == table;
            if next_element || !(name == table || name.starts_with(&format!("{table}."))) {
                break;
            }
            current = name;
            continue;
        }
        let Some((key, value)) = trimmed.split_once('=') else {
            continue;
        };
        let key = key.trim().trim_matches('"');
        let value = value.split('#').next().unwrap_or("").trim();
        if want_value.as_deref() == Some(value) || want_key.as_deref() == Some(key) {
            found.push((format!("{current}.{key}"), index));
        }
    }
    // Two keys holding the same value would make the guess a coin toss: then name the table only.
    match found.as_slice() {
        [only] => Some(only.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        assert_eq!(
            backticked_name("missing field `rate_hz`"),
            Some("rate_hz".into())
        );
        assert_eq!(backticked_name("no name"), None);
        assert_eq!(enclosing_table("[a]\nx = 1\n[a.b]\n", "y = 2"), "a.b");
        assert_eq!(enclosing_table("", "[[c]]"), "c");
        let table = "[p]\nx = 1\ny = 1\n";
        // Two keys hold the value: no guess.
        assert_eq!(
            key_holding_value(table, "p", "invalid type: integer `1`, expected a string"),
            None
        );
        assert_eq!(
            key_holding_value(
                "[p]\nx = 1\ny = 2 # note\n",
                "p",
                "invalid value: integer `2`, expected u8"
            ),
            Some(("p.y".into(), 2))
        );
        // An unknown key in a sub-table of a tagged table is found by its name.
        assert_eq!(
            key_holding_value(
                "[p]\nkind = \"s\"\n[p.f]\nkind = \"column\"\nbogus = 1\n[q]\nbogus = 2\n",
                "p",
                "unknown field `bogus`, there are no fields"
            ),
            Some(("p.f.bogus".into(), 4))
        );
    }

    #[test]
    fn message_reads_well() {
        let p = Place {
            field: "pattern.columns".into(),
            line: 3,
            message: "invalid type".into(),
        };
        assert_eq!(
            p.describe("sensor toml"),
            "sensor toml, line 3, field `pattern.columns`: invalid type"
        );
        let unplaced = Place {
            field: String::new(),
            line: 0,
            message: "invalid type".into(),
        };
        assert_eq!(
            unplaced.describe("mission toml"),
            "mission toml: invalid type"
        );
    }
}
