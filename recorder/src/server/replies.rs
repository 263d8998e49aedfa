//! What the scripted model answers, in each API's own shape: a script step as a Chat
//! Completions message or stream, a Responses object or stream, a Messages object or stream.

use serde_json::{Value, json};

use super::Api;
use crate::script::{Step, ToolBody, Usage};

/// The tool call's id: the script's, else one made of the step's number (so a retried request
/// gets the same id, and a re-recording the same ids).
fn call_id(step: &Step, api: Api, _n: u64) -> String {
    if let Some(id) = step.tool.as_ref().and_then(|t| t.id.clone()) {
        return id;
    }
    let n = step.number + 1;
    match api {
        Api::AnthropicMessages => format!("toolu_{n:024}"),
        _ => format!("call_{n}"),
    }
}

fn args_text(body: &ToolBody) -> String {
    match body {
        ToolBody::Args(v) => v.to_string(),
        ToolBody::Input(s) => s.clone(),
    }
}

fn args_value(body: &ToolBody) -> Value {
    match body {
        ToolBody::Args(v) => v.clone(),
        ToolBody::Input(s) => Value::String(s.clone()),
    }
}

fn chat_usage(u: Usage) -> Value {
    json!({"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens,
           "total_tokens": u.input_tokens + u.output_tokens})
}

/// A whole Chat Completions answer.
pub fn chat_message(step: &Step, model: &str, n: u64, usage: Usage) -> Value {
    let mut message = json!({"role": "assistant", "content": step.text});
    if let Some(thinking) = &step.thinking {
        message["reasoning_content"] = json!(thinking);
    }
    if let Some(tool) = &step.tool {
        message["tool_calls"] = json!([{"id": call_id(step, Api::OpenaiChat, n), "type": "function",
            "function": {"name": tool.name, "arguments": args_text(&tool.body)}}]);
    }
    json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": null,
            "finish_reason": if step.tool.is_some() { "tool_calls" } else { "stop" }}],
        "usage": chat_usage(usage)})
}

/// Chat Completions chunks (`data:` payloads; `[DONE]` last).
pub fn chat_stream(
    step: &Step,
    model: &str,
    n: u64,
    usage: Usage,
    include_usage: bool,
) -> Vec<(Option<String>, String)> {
    let id = format!("chatcmpl-{n}");
    let chunk = |delta: Value, finish: Value| {
        json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
        .to_string()
    };
    let mut out = vec![(
        None,
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
    )];
    if let Some(thinking) = &step.thinking {
        out.push((
            None,
            chunk(json!({"reasoning_content": thinking}), Value::Null),
        ));
    }
    if let Some(text) = &step.text {
        out.push((None, chunk(json!({"content": text}), Value::Null)));
    }
    if let Some(tool) = &step.tool {
        out.push((
            None,
            chunk(
                json!({"tool_calls": [{"index": 0, "id": call_id(step, Api::OpenaiChat, n), "type": "function",
                    "function": {"name": tool.name, "arguments": ""}}]}),
                Value::Null,
            ),
        ));
        out.push((
            None,
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": args_text(&tool.body)}}]}),
                Value::Null,
            ),
        ));
    }
    let finish = if step.tool.is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    out.push((None, chunk(json!({}), json!(finish))));
    if include_usage {
        out.push((
            None,
            json!({"id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
                "choices": [], "usage": chat_usage(usage)})
            .to_string(),
        ));
    }
    out.push((None, "[DONE]".into()));
    out
}

fn responses_items(step: &Step, n: u64) -> Vec<Value> {
    let mut items = Vec::new();
    if let Some(text) = &step.text {
        items.push(
            json!({"type": "message", "id": format!("msg_{n}"), "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}),
        );
    }
    if let Some(tool) = &step.tool {
        let call_id = call_id(step, Api::OpenaiResponses, n);
        items.push(match &tool.body {
            ToolBody::Args(v) => json!({"type": "function_call", "id": format!("fc_{n}"),
                "status": "completed", "call_id": call_id, "name": tool.name,
                "arguments": v.to_string()}),
            ToolBody::Input(s) => json!({"type": "custom_tool_call", "id": format!("ctc_{n}"),
                "status": "completed", "call_id": call_id, "name": tool.name, "input": s}),
        });
    }
    items
}

fn responses_usage(u: Usage) -> Value {
    json!({"input_tokens": u.input_tokens, "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": u.output_tokens, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": u.input_tokens + u.output_tokens})
}

/// A whole Responses API answer.
pub fn responses_object(step: &Step, model: &str, n: u64, usage: Usage) -> Value {
    json!({"id": format!("resp_{n}"), "object": "response", "created_at": 0, "status": "completed",
        "model": model, "output": responses_items(step, n), "usage": responses_usage(usage)})
}

/// Responses API events (`event:` name, `data:` payload).
pub fn responses_stream(
    step: &Step,
    model: &str,
    n: u64,
    usage: Usage,
) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    let mut push = |v: Value| {
        let name = v["type"].as_str().map(str::to_string);
        out.push((name, v.to_string()));
    };
    let pending = json!({"id": format!("resp_{n}"), "object": "response", "created_at": 0,
        "status": "in_progress", "model": model, "output": []});
    push(json!({"type": "response.created", "response": pending}));
    push(json!({"type": "response.in_progress", "response": pending}));
    for (index, item) in responses_items(step, n).into_iter().enumerate() {
        let mut added = item.clone();
        added["status"] = json!("in_progress");
        if added["type"] == "message" {
            added["content"] = json!([]);
        }
        push(json!({"type": "response.output_item.added", "output_index": index, "item": added}));
        if item["type"] == "message" {
            let text = item["content"][0]["text"].clone();
            let item_id = item["id"].clone();
            push(
                json!({"type": "response.content_part.added", "item_id": item_id,
                "output_index": index, "content_index": 0,
                "part": {"type": "output_text", "text": "", "annotations": []}}),
            );
            push(
                json!({"type": "response.output_text.delta", "item_id": item_id,
                "output_index": index, "content_index": 0, "delta": text}),
            );
            push(
                json!({"type": "response.output_text.done", "item_id": item_id,
                "output_index": index, "content_index": 0, "text": text}),
            );
            push(
                json!({"type": "response.content_part.done", "item_id": item_id,
                "output_index": index, "content_index": 0,
                "part": {"type": "output_text", "text": text, "annotations": []}}),
            );
        }
        push(json!({"type": "response.output_item.done", "output_index": index, "item": item}));
    }
    push(
        json!({"type": "response.completed", "response": responses_object(step, model, n, usage)}),
    );
    out
}

fn messages_content(step: &Step, n: u64) -> Vec<Value> {
    let mut content = Vec::new();
    if let Some(text) = &step.text {
        content.push(json!({"type": "text", "text": text}));
    }
    if let Some(tool) = &step.tool {
        content.push(
            json!({"type": "tool_use", "id": call_id(step, Api::AnthropicMessages, n),
            "name": tool.name, "input": args_value(&tool.body)}),
        );
    }
    content
}

fn stop_reason(step: &Step) -> &'static str {
    if step.tool.is_some() {
        "tool_use"
    } else {
        "end_turn"
    }
}

/// A whole Anthropic Messages answer.
pub fn messages_object(step: &Step, model: &str, n: u64, usage: Usage) -> Value {
    json!({"id": format!("msg_{n:024}"), "type": "message", "role": "assistant", "model": model,
        "content": messages_content(step, n), "stop_reason": stop_reason(step), "stop_sequence": null,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}})
}

/// Anthropic Messages events.
pub fn messages_stream(
    step: &Step,
    model: &str,
    n: u64,
    usage: Usage,
) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    let mut push = |v: Value| {
        let name = v["type"].as_str().map(str::to_string);
        out.push((name, v.to_string()));
    };
    push(
        json!({"type": "message_start", "message": {"id": format!("msg_{n:024}"), "type": "message",
        "role": "assistant", "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": 1,
            "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}}),
    );
    for (index, block) in messages_content(step, n).into_iter().enumerate() {
        if block["type"] == "text" {
            push(json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "text", "text": ""}}));
            push(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": block["text"]}}));
        } else {
            let mut start = block.clone();
            start["input"] = json!({});
            push(json!({"type": "content_block_start", "index": index, "content_block": start}));
            push(json!({"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": block["input"].to_string()}}));
        }
        push(json!({"type": "content_block_stop", "index": index}));
    }
    push(
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason(step), "stop_sequence": null},
        "usage": {"output_tokens": usage.output_tokens}}),
    );
    push(json!({"type": "message_stop"}));
    out
}
