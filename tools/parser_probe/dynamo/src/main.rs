//! Parse model outputs the way the Dynamo frontend's v1 path does and print the OpenAI fields it
//! would answer with.
//!
//! stdin:  {"tool_parser": "nemotron_nano", "reasoning_parser": "nemotron_nano",
//!          "cases": {"<id>": {"model_text": "...", "chunks": ["...", ...],
//!                             "tools": [{"name", "parameters"}], "in_reasoning": null}}}
//! stdout: {"<id>": {"stream": Answer, "batch": Answer}} with
//!         Answer = {"reasoning": str, "content": str, "tool_calls": [{"name": str, "arguments": str}]}
//!
//! `stream`: the text arrives as `chunks` (the deltas a backend streams); each goes through the
//! reasoning parser's incremental split, the normal text through the tool-call jail, and the deltas
//! are concatenated per tool-call index (what a client assembling a stream, or the frontend's
//! aggregator, ends up with). `batch`: the whole text through the reasoning parser, then the
//! tool-call parser with end-of-stream recovery. `arguments` stay the raw strings the parser emits.

use std::collections::BTreeMap;
use std::io::Read;

use dynamo_parsers::reasoning::{ReasoningParser, ReasoningParserType};
use dynamo_parsers::tool_calling::ToolDefinition;
use dynamo_parsers::tool_calling::jail::{Annotated, JailedStream};
use dynamo_parsers::tool_calling::parsers::detect_and_parse_tool_call_with_recovery;
use dynamo_protocols::types::{
    ChatChoiceStream, ChatCompletionMessageContent, ChatCompletionStreamResponseDelta,
    CreateChatCompletionStreamResponse, FinishReason, Role,
};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Deserialize)]
struct Request {
    tool_parser: String,
    reasoning_parser: String,
    cases: BTreeMap<String, Case>,
}

#[derive(Deserialize)]
struct Case {
    model_text: String,
    chunks: Vec<String>,
    #[serde(default)]
    tools: Vec<Tool>,
    #[serde(default)]
    in_reasoning: Option<bool>,
}

#[derive(Deserialize)]
struct Tool {
    name: String,
    #[serde(default)]
    parameters: Option<Value>,
}

#[derive(Serialize, Default)]
struct Call {
    name: String,
    arguments: String,
}

#[derive(Serialize, Default)]
struct Answer {
    reasoning: String,
    content: String,
    tool_calls: Vec<Call>,
}

#[derive(Serialize)]
struct Outcome {
    stream: Answer,
    batch: Answer,
}

fn definitions(case: &Case) -> Vec<ToolDefinition> {
    case.tools
        .iter()
        .map(|tool| ToolDefinition {
            name: tool.name.clone(),
            parameters: tool.parameters.clone(),
            strict: None,
        })
        .collect()
}

fn reasoning_parser(name: &str, in_reasoning: Option<bool>) -> impl ReasoningParser {
    let mut parser = ReasoningParserType::get_reasoning_parser_from_name(name);
    if let Some(state) = in_reasoning {
        parser.set_in_reasoning(state);
    }
    parser
}

/// One streamed chunk of the backend's answer as the frontend's postprocessor sees it.
fn chunk(text: Option<String>, last: bool) -> Annotated<CreateChatCompletionStreamResponse> {
    #[allow(deprecated)]
    let choice = ChatChoiceStream {
        index: 0,
        delta: ChatCompletionStreamResponseDelta {
            role: Some(Role::Assistant),
            content: text.map(ChatCompletionMessageContent::Text),
            tool_calls: None,
            function_call: None,
            refusal: None,
            reasoning_content: None,
        },
        finish_reason: last.then_some(FinishReason::Stop),
        logprobs: None,
    };
    Annotated {
        data: Some(CreateChatCompletionStreamResponse {
            id: "probe".into(),
            choices: vec![choice],
            created: 0,
            model: "probe".into(),
            system_fingerprint: None,
            object: "chat.completion.chunk".into(),
            usage: None,
            service_tier: None,
        }),
        id: None,
        event: None,
        comment: None,
        error: None,
    }
}

async fn streamed(request: &Request, case: &Case) -> Answer {
    let mut answer = Answer::default();
    let mut parser = reasoning_parser(&request.reasoning_parser, case.in_reasoning);
    let mut normal = Vec::new();
    for piece in &case.chunks {
        let split = parser.parse_reasoning_streaming_incremental(piece, &[]);
        answer.reasoning.push_str(&split.reasoning_text);
        normal.push(split.normal_text);
    }
    let tail = parser.finish_reasoning_stream();
    answer.reasoning.push_str(&tail.reasoning_text);
    normal.push(tail.normal_text);

    let mut inputs: Vec<_> = normal
        .into_iter()
        .filter(|text| !text.is_empty())
        .map(|text| chunk(Some(text), false))
        .collect();
    inputs.push(chunk(None, true));
    let mut builder = JailedStream::builder().tool_call_parser(request.tool_parser.as_str());
    let tools = definitions(case);
    if !tools.is_empty() {
        builder = builder.tool_definitions(tools);
    }
    let outputs: Vec<_> = builder
        .build()
        .apply(futures::stream::iter(inputs))
        .collect()
        .await;

    let mut calls: BTreeMap<u32, Call> = BTreeMap::new();
    for output in outputs {
        let Some(response) = output.data else {
            continue;
        };
        for choice in response.choices {
            if let Some(ChatCompletionMessageContent::Text(text)) = choice.delta.content {
                answer.content.push_str(&text);
            }
            for delta in choice.delta.tool_calls.unwrap_or_default() {
                let call = calls.entry(delta.index).or_default();
                if let Some(function) = delta.function {
                    if let Some(name) = function.name {
                        call.name.push_str(&name);
                    }
                    if let Some(arguments) = function.arguments {
                        call.arguments.push_str(&arguments);
                    }
                }
            }
        }
    }
    answer.tool_calls = calls.into_values().collect();
    answer
}

async fn batch(request: &Request, case: &Case) -> anyhow::Result<Answer> {
    let mut parser = reasoning_parser(&request.reasoning_parser, case.in_reasoning);
    let split = parser.detect_and_parse_reasoning(&case.model_text, &[]);
    let tools = definitions(case);
    let tools = (!tools.is_empty()).then_some(tools.as_slice());
    let (calls, content) = detect_and_parse_tool_call_with_recovery(
        &split.normal_text,
        Some(&request.tool_parser),
        tools,
    )
    .await?;
    Ok(Answer {
        reasoning: split.reasoning_text,
        content: content.unwrap_or_default(),
        tool_calls: calls
            .into_iter()
            .map(|call| Call {
                name: call.function.name,
                arguments: call.function.arguments,
            })
            .collect(),
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input)?;
    let request: Request = serde_json::from_str(&input)?;
    let mut outcomes = BTreeMap::new();
    for (id, case) in &request.cases {
        let outcome = Outcome {
            stream: streamed(&request, case).await,
            batch: batch(&request, case).await?,
        };
        outcomes.insert(id.clone(), outcome);
    }
    println!("{}", serde_json::to_string(&outcomes)?);
    Ok(())
}
