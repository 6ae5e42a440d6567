//! An agent loop that talks to a real model endpoint: any OpenAI-compatible
//! Chat Completions server (llama.cpp's, vLLM, Ollama, a hosted API in its
//! compatible mode, or `envaware-sim model-server`). Each step is decided
//! and its hint appended; the context is sent as AgentScope's formatter
//! sends it (`envaware::openai::ChatRequest`); the reply is read back
//! (`ChatResponse`) and appended; a tool call is run and its result
//! appended; the loop ends when the model answers with text alone.
//!
//! ```sh
//! cargo run -p envaware-host --example chat -- --endpoint http://127.0.0.1:8080/v1 --model NAME
//! ```
//!
//! The key, if the endpoint wants one, comes from `OPENAI_API_KEY` (sent as
//! `Authorization: Bearer …`). Plain HTTP only: the example's client is
//! built without TLS.

use std::time::{SystemTime, UNIX_EPOCH};

use envaware::openai::{ChatRequest, ChatResponse};
use envaware::{
    AgentContext, Block, ConfigBuf, Engine, FixedClock, Role, StepInput, TaskCounts, Timestamp,
    ToolResultState,
};

const TOOLS: &str = r#"[{"type":"function","function":{"name":"ReadTemperature","description":"The greenhouse's temperature","parameters":{"type":"object","properties":{}}}}]"#;

struct Args {
    endpoint: String,
    model: String,
    steps: u64,
}

fn args() -> Result<Args, String> {
    let mut args = Args { endpoint: String::new(), model: String::new(), steps: 4 };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--endpoint" => args.endpoint = value()?,
            "--model" => args.model = value()?,
            "--steps" => args.steps = value()?.parse().map_err(|e| format!("--steps: {e}"))?,
            other => {
                return Err(format!(
                    "unknown argument {other} (--endpoint URL --model NAME [--steps N])"
                ))
            }
        }
    }
    if args.endpoint.is_empty() || args.model.is_empty() {
        return Err("usage: chat --endpoint URL --model NAME [--steps N]".into());
    }
    Ok(args)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args()?;
    let url = format!("{}/chat/completions", args.endpoint.trim_end_matches('/'));
    let key = std::env::var("OPENAI_API_KEY").ok();
    // The greenhouse's configuration, as the simulator and the firmware read it.
    let mut config = ConfigBuf::new();
    let loaded = config.load_session(include_str!("../../examples/sprout.config.json"))?;
    let engine = Engine::new(loaded.config)?;
    let mut context: AgentContext<'_, 32, 128, 16384> =
        AgentContext::new(&engine, loaded.agent_name);
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
    let mut clock = FixedClock::at(Timestamp::from_unix_seconds(now as i64));
    let (mut hint, mut scratch) = ([0u8; 2048], vec![0u8; 1 << 16]);
    let agent = ureq::Agent::new_with_defaults();

    context.observe(Role::User, "user", &[Block::Text("How warm is the greenhouse?")])?;
    let mut input_tokens = 0;
    for cur_iter in 0..args.steps {
        let step = StepInput {
            tasks: TaskCounts::default(),
            cur_iter,
            input_tokens,
            context_size: loaded.context_size,
        };
        let told = context.step(&step, &mut clock, &mut (), &mut hint)?.hint.map(str::to_owned);
        let request = ChatRequest {
            model: &args.model,
            system_prompt: "You are Sprout, a greenhouse robot.",
            tools: Some(TOOLS),
            ..ChatRequest::default()
        };
        let mut body = Vec::with_capacity(request.body_len(context.store()));
        request.write_body(context.store(), &mut body)?;
        println!(
            "step {cur_iter}: request {} bytes{}",
            body.len(),
            match &told {
                Some(h) => format!(", with the hint {:?}", h.lines().nth(1).unwrap_or_default()),
                None => String::new(),
            }
        );
        let mut post = agent.post(&url).header("Content-Type", "application/json");
        if let Some(key) = &key {
            post = post.header("Authorization", &format!("Bearer {key}"));
        }
        let reply = post.send(&body[..])?.body_mut().read_to_vec()?;
        let read = ChatResponse::parse(&reply, &mut scratch)?;
        if let Some(tokens) = read.prompt_tokens() {
            input_tokens = i64::try_from(tokens).unwrap_or(i64::MAX);
        }
        // The reply's blocks, appended as AgentScope appends them: all or nothing.
        context.agent(read.blocks())?;
        let calls: Vec<(String, String)> = read
            .blocks()
            .iter()
            .filter_map(|b| match b {
                Block::ToolCall { id, name, .. } => Some((id.to_string(), name.to_string())),
                _ => None,
            })
            .collect();
        println!("  model: {}", read.text().unwrap_or("(no text)"));
        if calls.is_empty() {
            println!(
                "done after {} requests: {} messages in the context",
                cur_iter + 1,
                context.len()
            );
            return Ok(());
        }
        for (id, name) in calls {
            let (state, output) = match name.as_str() {
                "ReadTemperature" => (ToolResultState::Success, "23.5 °C"),
                _ => (ToolResultState::Error, "no such tool"),
            };
            println!("  tool {name} ({id}): {output}");
            let result = Block::ToolResult { id: &id, name: &name, state, output };
            context.agent(&[result])?;
        }
        clock =
            FixedClock::at(Timestamp::from_unix_seconds(now as i64 + 60 * (cur_iter as i64 + 1)));
    }
    Err(format!("no final answer in {} steps", args.steps).into())
}
