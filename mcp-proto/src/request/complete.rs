//! `completion/complete`: the values a server suggests for an argument of a prompt or a
//! resource template.

use serde_json::{Map, Value, json};

use super::{Method, Request};

/// Asks for the values of `argument` of `reference`, given what is typed (`value`) and the
/// arguments already chosen (`context`, left out when empty): one `completion/complete`.
#[derive(Debug, Clone, PartialEq)]
pub struct Complete {
    /// The prompt or resource template the argument belongs to.
    pub reference: CompletionRef,
    /// The argument's name.
    pub argument: String,
    /// What is typed so far.
    pub value: String,
    /// The other arguments' values already chosen.
    pub context: Map<String, Value>,
}

impl Complete {
    /// A completion of `argument` of `reference` given `value`, with no context.
    pub fn new(
        reference: CompletionRef,
        argument: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        Self {
            reference,
            argument: argument.into(),
            value: value.into(),
            context: Map::new(),
        }
    }

    /// The same, with the other arguments already chosen.
    #[must_use]
    pub fn with_context(mut self, context: Map<String, Value>) -> Self {
        self.context = context;
        self
    }
}

impl Request for Complete {
    const METHOD: &'static Method = &Method {
        name: "completion/complete",
        named_by: None,
        input_rounds: false,
        cached: false,
    };
    type Output = Completion;

    fn params(&self) -> Map<String, Value> {
        let reference = match &self.reference {
            CompletionRef::Prompt(name) => json!({"type": "ref/prompt", "name": name}),
            CompletionRef::Resource(uri) => json!({"type": "ref/resource", "uri": uri}),
        };
        let mut params = Map::from_iter([
            ("ref".to_owned(), reference),
            (
                "argument".to_owned(),
                json!({"name": self.argument, "value": self.value}),
            ),
        ]);
        if !self.context.is_empty() {
            params.insert("context".to_owned(), json!({"arguments": self.context}));
        }
        params
    }

    fn read(result: Map<String, Value>) -> Result<Completion, String> {
        let Some(Value::Object(completion)) = result.get("completion") else {
            return Err("the result has no \"completion\" object".to_owned());
        };
        let Some(Value::Array(values)) = completion.get("values") else {
            return Err("the completion has no \"values\" array".to_owned());
        };
        let given = values.iter().filter_map(Value::as_str);
        Ok(Completion {
            values: given
                .take(Completion::MAX_VALUES)
                .map(str::to_owned)
                .collect(),
            total: completion.get("total").and_then(Value::as_u64),
            has_more: completion.get("hasMore").and_then(Value::as_bool) == Some(true)
                || values.len() > Completion::MAX_VALUES,
        })
    }
}

/// What a completion is for (`completion/complete`'s `ref`): a prompt's argument, or a
/// resource template's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionRef {
    /// The prompt of this name (`ref/prompt`).
    Prompt(String),
    /// The resource template (or resource) of this URI (`ref/resource`).
    Resource(String),
}

/// The result of `completion/complete`: the values the server suggests for the argument.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The suggestions, in the server's order (at most [`Completion::MAX_VALUES`]; values
    /// that are not strings are dropped).
    pub values: Vec<String>,
    /// How many there are in all, when the server says.
    pub total: Option<u64>,
    /// Whether there are more than the ones given.
    pub has_more: bool,
}

impl Completion {
    /// The most values a server may give (the protocol's limit); more are cut.
    pub const MAX_VALUES: usize = 100;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_carry_the_ref_the_argument_and_a_context_only_when_given() {
        let bare = Complete::new(CompletionRef::Resource("file:///{p}".into()), "p", "a");
        assert_eq!(
            Value::Object(bare.params()),
            json!({"ref": {"type": "ref/resource", "uri": "file:///{p}"},
                   "argument": {"name": "p", "value": "a"}})
        );
        let context = Map::from_iter([("lang".to_owned(), Value::from("en"))]);
        let with =
            Complete::new(CompletionRef::Prompt("g".into()), "who", "").with_context(context);
        assert_eq!(
            with.params()["context"],
            json!({"arguments": {"lang": "en"}})
        );
        assert_eq!(
            with.params()["ref"],
            json!({"type": "ref/prompt", "name": "g"})
        );
    }

    #[test]
    fn more_than_the_protocols_hundred_values_are_cut_and_said_to_be_more() {
        let values: Vec<Value> = (0..150).map(|i| Value::from(i.to_string())).collect();
        let result = json!({"completion": {"values": values}});
        let read = Complete::read(result.as_object().cloned().unwrap_or_default()).unwrap();
        assert_eq!(read.values.len(), Completion::MAX_VALUES);
        assert!(read.has_more);
        assert!(Complete::read(Map::new()).is_err());
    }
}
