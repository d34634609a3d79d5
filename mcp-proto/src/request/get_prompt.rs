//! `prompts/get`: a prompt's messages, given its arguments.

use serde_json::{Map, Value};

use super::{Method, Request, joined};

/// Gets a prompt by name with its arguments (one `prompts/get`).
#[derive(Debug, Clone, PartialEq)]
pub struct GetPrompt {
    /// The prompt's name.
    pub name: String,
    /// Its arguments (left out of the request when empty).
    pub arguments: Map<String, Value>,
}

impl GetPrompt {
    /// The prompt `name` with `arguments`.
    pub fn new(name: impl Into<String>, arguments: Map<String, Value>) -> Self {
        Self {
            name: name.into(),
            arguments,
        }
    }
}

impl Request for GetPrompt {
    const METHOD: &'static Method = &Method {
        name: "prompts/get",
        named_by: Some("name"),
        input_rounds: true,
        cached: false,
    };
    type Output = GetPromptResult;

    fn params(&self) -> Map<String, Value> {
        let mut params = Map::from_iter([("name".to_owned(), Value::from(self.name.as_str()))]);
        if !self.arguments.is_empty() {
            params.insert(
                "arguments".to_owned(),
                Value::Object(self.arguments.clone()),
            );
        }
        params
    }

    fn read(result: Map<String, Value>) -> Result<GetPromptResult, String> {
        let messages = match result.get("messages") {
            Some(Value::Array(messages)) => messages.clone(),
            _ => return Err("the result has no \"messages\" array".to_owned()),
        };
        Ok(GetPromptResult {
            description: (result.get("description").and_then(Value::as_str)).map(str::to_owned),
            messages,
            raw: result,
        })
    }
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, PartialEq)]
pub struct GetPromptResult {
    /// `description`, when given.
    pub description: Option<String>,
    /// The messages, verbatim: objects with `role` and `content`.
    pub messages: Vec<Value>,
    /// The whole `result` object as the server sent it.
    pub raw: Map<String, Value>,
}

impl GetPromptResult {
    /// The text of each message's text content, one per line.
    pub fn text(&self) -> String {
        joined(
            self.messages
                .iter()
                .filter_map(|m| m.get("content"))
                .filter(|c| c.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|c| c.get("text")),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_arguments_are_left_out_and_the_text_is_the_text_contents() {
        assert_eq!(
            Value::Object(GetPrompt::new("p", Map::new()).params()),
            json!({"name": "p"})
        );
        let result = json!({"description": "d", "messages": [
            {"role": "user", "content": {"type": "text", "text": "hi"}},
            {"role": "user", "content": {"type": "image", "data": "x", "mimeType": "image/png"}}
        ]});
        let prompt = GetPrompt::read(result.as_object().cloned().unwrap_or_default()).unwrap();
        assert_eq!(prompt.text(), "hi");
        assert_eq!(prompt.description.as_deref(), Some("d"));
        assert!(GetPrompt::read(Map::new()).is_err());
    }
}
