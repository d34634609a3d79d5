//! A tool's result read straight from its JSON text into its type ([`Members`]), in one
//! pass, with the meaning `CallToolResult::from_result` gives it decoded: a member seen twice
//! counts as its last, a block of a type this client does not know (or not quite of its type)
//! is kept as a value, and what a decoded result refuses (a number out of range) is refused.
//! It reads; it never decides what the operation does with what it read.

use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::Content;

/// The members of a `result` a tool's result is made of, each as its last occurrence.
#[derive(Default)]
pub(super) struct Members {
    /// `content`: `None` when absent.
    pub(super) content: Option<Blocks>,
    pub(super) structured_content: Option<Value>,
    pub(super) is_error: Option<Value>,
    result_type: Option<Value>,
    task: Option<Value>,
}

impl Members {
    /// Whether the result names a task or asks for input, in either era: the operation reads
    /// those as objects (`read` in `answer`), whatever the era makes of them.
    pub(super) fn names_task_or_input(&self) -> bool {
        let result_type = self.result_type.as_ref().and_then(Value::as_str);
        matches!(result_type, Some("task" | "input_required"))
            || matches!(self.task, Some(Value::Object(_)))
    }
}

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Read;
        impl<'de> Visitor<'de> for Read {
            type Value = Members;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a result object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                const NAMES: &[&str] = &[
                    "content",
                    "structuredContent",
                    "isError",
                    "resultType",
                    "task",
                ];
                let mut read = Members::default();
                while let Some(name) = map.next_key_seed(Names(NAMES))? {
                    match name {
                        Name::Known(0) => read.content = Some(map.next_value()?),
                        Name::Known(1) => read.structured_content = Some(map.next_value()?),
                        Name::Known(2) => read.is_error = Some(map.next_value()?),
                        Name::Known(3) => read.result_type = Some(map.next_value()?),
                        Name::Known(_) => read.task = Some(map.next_value()?),
                        // Read as a value (and dropped), so what a decoded result refuses (a
                        // number out of range) is refused here too.
                        Name::Other(_) => {
                            map.next_value::<Value>()?;
                        }
                    }
                }
                Ok(read)
            }
        }
        deserializer.deserialize_map(Read)
    }
}

/// A result's `content`.
pub(super) enum Blocks {
    /// An array: its blocks.
    Read(Vec<Content>),
    /// `null`: no blocks.
    Null,
    /// Anything else.
    NotAnArray,
}

impl<'de> Deserialize<'de> for Blocks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Read;
        impl<'de> Visitor<'de> for Read {
            type Value = Blocks;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("content blocks")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Blocks, A::Error> {
                let mut blocks = Vec::with_capacity(seq.size_hint().unwrap_or(1).min(16));
                while let Some(Block(block)) = seq.next_element()? {
                    blocks.push(block);
                }
                Ok(Blocks::Read(blocks))
            }
            fn visit_unit<E>(self) -> Result<Blocks, E> {
                Ok(Blocks::Null)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Blocks, A::Error> {
                Value::deserialize(MapAccessDeserializer::new(map)).map(|_| Blocks::NotAnArray)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Blocks, E> {
                Ok(Blocks::NotAnArray)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Blocks, E> {
                Ok(Blocks::NotAnArray)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Blocks, E> {
                Ok(Blocks::NotAnArray)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Blocks, E> {
                Ok(Blocks::NotAnArray)
            }
            fn visit_str<E>(self, _: &str) -> Result<Blocks, E> {
                Ok(Blocks::NotAnArray)
            }
        }
        deserializer.deserialize_any(Read)
    }
}

/// One content block as [`Content::from_block`] would read it decoded: a known type when its
/// members make it one, else the block as a value.
struct Block(Content);

impl<'de> Deserialize<'de> for Block {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Read;
        impl<'de> Visitor<'de> for Read {
            type Value = Block;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a content block")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Block, A::Error> {
                const NAMES: &[&str] = &["type", "text", "data", "mimeType"];
                let mut known: [Option<Value>; 4] = Default::default();
                let mut others = Map::new();
                while let Some(name) = map.next_key_seed(Names(NAMES))? {
                    match name {
                        Name::Known(at) => known[at] = Some(map.next_value()?),
                        Name::Other(name) => {
                            others.insert(name, map.next_value()?);
                        }
                    }
                }
                Ok(Block(fields(known, others)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Block, A::Error> {
                Value::deserialize(SeqAccessDeserializer::new(seq)).map(other)
            }
            fn visit_unit<E>(self) -> Result<Block, E> {
                Ok(other(Value::Null))
            }
            fn visit_bool<E>(self, value: bool) -> Result<Block, E> {
                Ok(other(Value::from(value)))
            }
            fn visit_i64<E>(self, value: i64) -> Result<Block, E> {
                Ok(other(Value::from(value)))
            }
            fn visit_u64<E>(self, value: u64) -> Result<Block, E> {
                Ok(other(Value::from(value)))
            }
            fn visit_f64<E>(self, value: f64) -> Result<Block, E> {
                Ok(other(Value::from(value)))
            }
            fn visit_str<E>(self, value: &str) -> Result<Block, E> {
                Ok(other(Value::from(value)))
            }
        }
        deserializer.deserialize_any(Read)
    }
}

/// A block that is no object.
fn other(value: Value) -> Block {
    Block(Content::Other(value))
}

/// The block whose `type`, `text`, `data` and `mimeType` are `known` (each its last
/// occurrence) and whose other members are `others`.
fn fields(known: [Option<Value>; 4], mut others: Map<String, Value>) -> Content {
    let [kind, text, data, mime_type] = known;
    let string = |value: &Option<Value>| matches!(value, Some(Value::String(_)));
    let typed = match kind.as_ref().and_then(Value::as_str) {
        Some("text") => string(&text),
        Some("image" | "audio") => string(&data) && string(&mime_type),
        _ => false,
    };
    let take = |value: Option<Value>| match value {
        Some(Value::String(text)) => text,
        _ => String::new(),
    };
    match (typed, kind.as_ref().and_then(Value::as_str)) {
        (true, Some("text")) => Content::Text { text: take(text) },
        (true, Some("image")) => Content::Image {
            data: take(data),
            mime_type: take(mime_type),
        },
        (true, _) => Content::Audio {
            data: take(data),
            mime_type: take(mime_type),
        },
        (false, _) => {
            for (name, value) in [
                ("type", kind),
                ("text", text),
                ("data", data),
                ("mimeType", mime_type),
            ] {
                if let Some(value) = value {
                    others.insert(name.to_owned(), value);
                }
            }
            Content::Other(Value::Object(others))
        }
    }
}

/// A member's name: its place among the names a reader knows, or the name itself.
enum Name {
    Known(usize),
    Other(String),
}

/// Reads a member's name against `names` (an escaped name, `"t\u0065xt"`, is the name it
/// spells); only a name not among them is kept as a string.
struct Names(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for Names {
    type Value = Name;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Name, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl Visitor<'_> for Names {
    type Value = Name;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Name, E> {
        Ok(match self.0.iter().position(|known| *known == name) {
            Some(at) => Name::Known(at),
            None => Name::Other(name.to_owned()),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::super::{CallToolResult, Content, Plain};
    use crate::jsonrpc::arbitrary::{self, object};

    /// `read_plain` on `text`, and `from_result` on the same text decoded: what each made of it.
    fn both(
        text: &str,
    ) -> (
        Option<Result<CallToolResult, String>>,
        Result<CallToolResult, String>,
    ) {
        let raw = serde_json::value::RawValue::from_string(text.to_owned()).unwrap();
        let decoded: Map<String, Value> = serde_json::from_str(text).unwrap();
        let straight = match CallToolResult::read_plain(raw) {
            Plain::Call(call) => Some(call),
            Plain::Not(_) => None,
        };
        (straight, CallToolResult::from_result(decoded))
    }

    #[test]
    fn a_tool_result_read_straight_is_the_one_decoded_first() {
        let cases = [
            r#"{"content":[{"type":"text","text":"hi"}],"isError":false}"#,
            r#"{"content":[{"type":"text","text":"a"},{"type":"image","data":"AA==","mimeType":"image/png"}]}"#,
            r#"{"content":[{"type":"audio","data":"AA==","mimeType":"audio/wav","x":[1]}],"isError":true}"#,
            r#"{"content":[{"type":"text"},{"type":"image","data":"AA=="},{"type":7,"text":"x"}]}"#,
            r#"{"content":[1,"x",null,[{"type":"text","text":"t"}]]}"#,
            r#"{"content":[{"type":"resource_link","uri":"file:///a"}],"structuredContent":{"a":1}}"#,
            r#"{"content":null,"structuredContent":null,"isError":"true"}"#,
            r#"{"content":"text","isError":true}"#,
            r#"{"content":{"type":"text","text":"x"}}"#,
            r#"{"content":"x","content":[{"type":"text","text":"last"}]}"#,
            r#"{"content":[{"type":"text","text":"one","text":"two","type":"text"}]}"#,
            r#"{"c\u006fntent":[{"typ\u0065":"text","t\u0065xt":"esc\u00e9"}]}"#,
            r#"{"_meta":{"k":"v"},"resultType":"complete","other":[1,{"a":null}]}"#,
            r#"{"content":[{"type":"text","text":"t","x":{"deep":[1,null]}}]}"#,
            r#"{}"#,
        ];
        for case in cases {
            let (straight, decoded) = both(case);
            assert_eq!(straight, Some(decoded), "{case}");
        }
    }

    #[test]
    fn a_task_or_a_request_for_input_is_left_to_the_operation() {
        for case in [
            r#"{"resultType":"task","taskId":"t"}"#,
            r#"{"resultType":"input_required","inputRequests":{}}"#,
            r#"{"task":{"taskId":"t","status":"working"},"content":[]}"#,
            r#"{"resultType":"complete","resultType":"task"}"#,
        ] {
            assert!(both(case).0.is_none(), "{case}");
        }
        // A number out of range anywhere: the operation reads it decoded, and says why not.
        for case in [
            r#"{"content":[],"x":1e400}"#,
            r#"{"content":[{"type":"text","text":"t","x":1e400}]}"#,
            r#"{"content":[{"type":"other","n":-1e999}]}"#,
            r#"{"structuredContent":{"n":1e400}}"#,
        ] {
            let raw = serde_json::value::RawValue::from_string(case.to_owned()).unwrap();
            assert!(
                matches!(CallToolResult::read_plain(raw), Plain::Not(_)),
                "{case}"
            );
        }
        // Not objects: the operation says so.
        for case in ["[1]", "1", "null", "\"x\""] {
            let raw = serde_json::value::RawValue::from_string(case.to_owned()).unwrap();
            assert!(
                matches!(CallToolResult::read_plain(raw), Plain::Not(_)),
                "{case}"
            );
        }
    }

    #[test]
    fn the_raw_result_is_the_text_the_server_sent() {
        let text = r#"{ "isError" : false, "content" : [ {"type":"text","text":"hi"} ] }"#;
        let (Some(Ok(call)), _) = both(text) else {
            panic!("not read")
        };
        assert_eq!(call.raw.get(), text);
        assert_eq!(
            call.content,
            [Content::Text {
                text: "hi".to_owned()
            }]
        );
        assert_eq!(
            Value::Object(call.raw_object()),
            json!({"isError": false, "content": [{"type": "text", "text": "hi"}]})
        );
    }

    /// Any JSON, with a block's member names among its objects' and the words a block's
    /// type may be among its strings.
    fn any_json() -> impl proptest::strategy::Strategy<Value = Value> {
        arbitrary::any_json(
            "(type|text|data|mimeType|x)",
            "(text|image|audio|task|[a-z ]{0,6})",
        )
    }

    proptest::proptest! {
        /// Whatever a result holds (its members and its blocks' members any JSON, some
        /// twice), read straight it is the result decoded first, or it is left to the
        /// operation because it names a task or asks for input.
        #[test]
        fn reading_straight_agrees_with_decoding_first(
            members in proptest::collection::vec(
                ("(content|structuredContent|isError|resultType|task|x)", any_json()), 0..6),
            blocks in proptest::collection::vec(
                proptest::collection::vec(("(type|text|data|mimeType|x)", any_json()), 0..5),
                0..4),
        ) {
            let blocks: Vec<String> = blocks.iter().map(|block| object(block)).collect();
            let mut text = object(&members);
            text.insert_str(1, &format!("\"content\":[{}]{}", blocks.join(","),
                if members.is_empty() { "" } else { "," }));
            let (straight, decoded) = both(&text);
            match straight {
                Some(straight) => proptest::prop_assert_eq!(straight, decoded),
                None => {
                    let read: super::Members = serde_json::from_str(&text).unwrap();
                    proptest::prop_assert!(read.names_task_or_input(), "{}", text);
                }
            }
        }
    }
}
