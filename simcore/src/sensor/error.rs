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

    /// An Ouster metadata JSON ([`SensorModel::from_ouster_metadata`](super::SensorModel::from_ouster_metadata))
    /// is malformed or lacks what a model needs; the message names the key.
    #[error("Ouster metadata: {message}")]
    Metadata {
        /// What is missing or wrong, naming the key.
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
    crate::toml_place::describe("sensor toml", field, line, message)
}

/// Turns a TOML deserialisation error into [`SensorError::Parse`], naming the field and line
/// ([`crate::toml_place`]).
pub(crate) fn from_toml_error(text: &str, error: &toml::de::Error) -> SensorError {
    let p = crate::toml_place::place_of(text, error);
    SensorError::Parse {
        field: p.field,
        line: p.line,
        message: p.message,
    }
}
