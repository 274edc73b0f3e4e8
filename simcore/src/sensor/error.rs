//! Errors of sensor models: a TOML file that does not parse into a model, a model whose values are out of range,
//! an unknown preset name. Every message names the field at fault.

/// What went wrong loading or checking a [`SensorModel`](super::SensorModel).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SensorError {
    /// The TOML text is malformed or does not match the model's shape (a missing, unknown or mistyped field).
    /// `field` is the dotted path of the field when it could be found (`pattern.columns`), else empty; `line` is
    /// 1-based, 0 when unknown.
    #[error("{}", parse_message(field, *line, message))]
    Parse {
        /// Dotted path of the field (`pattern.columns`), or empty.
        field: String,
        /// Line in the TOML text, 1-based; 0 when unknown.
        line: usize,
        /// The parser's message.
        message: String,
    },

    /// The model parsed but a value is out of range or inconsistent with another field.
    #[error("sensor field `{field}`: {message}")]
    Invalid {
        /// Dotted path of the field (`pattern.columns`).
        field: String,
        /// What is wrong with its value.
        message: String,
    },

    /// [`SensorModel::preset`](super::SensorModel::preset) was given a name it does not ship.
    #[error("unknown sensor preset \"{name}\"; the presets are: {known}")]
    UnknownPreset {
        /// The name asked for.
        name: String,
        /// The shipped presets' names, comma-separated.
        known: String,
    },
}

impl SensorError {
    /// Shorthand for [`SensorError::Invalid`].
    pub(crate) fn invalid(field: impl Into<String>, message: impl Into<String>) -> SensorError {
        SensorError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}

fn parse_message(field: &str, line: usize, message: &str) -> String {
    let mut text = String::from("sensor toml");
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

/// Turns a TOML deserialisation error into [`SensorError::Parse`], recovering the dotted field path from the
/// error's span (the key on the line it points at and the table header above it) or from the field serde names in
/// its message (`missing field `x``).
pub(crate) fn from_toml_error(text: &str, error: &toml::de::Error) -> SensorError {
    let message = error.message().trim().to_string();
    let named = backticked_name(&message);
    let Some(span) = error.span() else {
        return SensorError::Parse {
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
        return SensorError::Parse {
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
    SensorError::Parse {
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
            if !(name == table || name.starts_with(&format!("{table}."))) {
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
        let e = SensorError::Parse {
            field: "pattern.columns".into(),
            line: 3,
            message: "invalid type".into(),
        };
        assert_eq!(
            e.to_string(),
            "sensor toml, line 3, field `pattern.columns`: invalid type"
        );
    }
}
