//! What the model sees: the context as an OpenAI Chat Completions request
//! (feature `openai`), byte for byte the `messages` AgentScope 2.0.11's
//! `OpenAIChatFormatter` sends, written with no heap; docs/openai.md.
//!
//! The request is [`ChatRequest`]. The context's texts and tool outputs
//! are sent only when kept: [`Block::Text`](crate::Block::Text) and a
//! tool result's `output` ([`AgentContext::tool_result`](crate::AgentContext)
//! keeps none; append the blocks with
//! [`AgentContext::agent`](crate::AgentContext::agent) and
//! [`AgentContext::observe`](crate::AgentContext::observe) to send them).

pub(crate) mod request;
mod response;

pub use request::ChatRequest;
pub use response::{ChatResponse, ResponseError, ResponsePath, MAX_TOOL_CALLS};

#[cfg(test)]
mod tests;
