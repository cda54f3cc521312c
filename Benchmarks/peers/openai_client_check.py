"""The official openai client against `embeddings serve`: embeddings.create on a string and a
list, float and base64, compared with `embeddings embed` (cosine >= 0.999999); then
chat.completions.create whole and streamed (the deltas join into the whole answer, greedy) and
chat.completions.parse into a pydantic model (structured output through response_format), and a
required tool call followed by the request that carries the tool's output.

Usage: openai_client_check.py EMBEDDINGS_BINARY BASE_URL API_KEY
"""
import base64
import json
import math
import struct
import subprocess
import sys

from typing import Literal

from openai import OpenAI
from pydantic import BaseModel, Field

binary, base_url, key = sys.argv[1:4]
texts = [
    "How do I unwrap an optional safely?",
    "A closure captures variables from the scope around it.",
    "Café naïve — 東京 🚀",
]
lines = "".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts))
out = subprocess.run([binary, "embed", "--quiet"], input=lines.encode(), capture_output=True, check=True).stdout
expected = [json.loads(line)["vector"] for line in out.decode().splitlines()]


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


client = OpenAI(base_url=base_url, api_key=key)
worst = 1.0
for encoding in ("float", "base64"):
    single = client.embeddings.create(model="all-MiniLM-L6-v2", input=texts[0], encoding_format=encoding)
    assert len(single.data) == 1 and single.data[0].index == 0, single
    batch = client.embeddings.create(model="all-MiniLM-L6-v2", input=texts, encoding_format=encoding)
    assert [d.index for d in batch.data] == [0, 1, 2], batch
    assert batch.usage.prompt_tokens > 0 and batch.usage.total_tokens == batch.usage.prompt_tokens, batch.usage
    pairs = [(single.data[0].embedding, expected[0])] + [(d.embedding, expected[d.index]) for d in batch.data]
    for got, want in pairs:
        if encoding == "base64":
            # Asked for explicitly, the client hands the string over as sent: little-endian float32.
            assert isinstance(got, str), type(got)
            raw = base64.b64decode(got)
            got = list(struct.unpack(f"<{len(raw) // 4}f", raw))
        assert isinstance(got, list) and len(got) == 384, (encoding, type(got))
        c = cosine(got, want)
        worst = min(worst, c)
        assert c >= 0.999999, (encoding, c)
# The client's default (it asks for base64 and decodes it into floats itself).
default = client.embeddings.create(model="all-MiniLM-L6-v2", input=texts)
for d in default.data:
    worst = min(worst, cosine(d.embedding, expected[d.index]))
    assert cosine(d.embedding, expected[d.index]) >= 0.999999
# A wrong key is refused in OpenAI's shape, which the client raises as AuthenticationError.
try:
    OpenAI(base_url=base_url, api_key="wrong").embeddings.create(model="m", input="x")
    raise SystemExit("error: a wrong key was accepted")
except Exception as error:  # openai.AuthenticationError
    assert type(error).__name__ == "AuthenticationError", repr(error)
print(f"openai client {__import__('openai').__version__}: string and list, float and base64: worst cosine {worst:.9f} (>= 0.999999)")

# Chat completions on the server's chat model (SmolLM2-135M-Instruct by default).
chat_model = next(m.id for m in client.models.list().data if "SmolLM2" in m.id)
question = [{"role": "user", "content": "What is the capital of France?"}]
whole = client.chat.completions.create(model=chat_model, messages=question, temperature=0, max_tokens=24)
assert whole.object == "chat.completion" and whole.model == chat_model, whole
answer = whole.choices[0].message
assert answer.role == "assistant" and "Paris" in answer.content, answer
assert whole.choices[0].finish_reason == "stop", whole.choices[0]
usage = whole.usage
assert usage.prompt_tokens > 0 and usage.completion_tokens > 0, usage
assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens, usage
chunks = list(
    client.chat.completions.create(
        model=chat_model, messages=question, temperature=0, max_tokens=24, stream=True,
        stream_options={"include_usage": True},
    )
)
assert chunks[0].choices[0].delta.role == "assistant", chunks[0]
streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
assert streamed == answer.content, (streamed, answer.content)
assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] == ["stop"]
assert chunks[-1].usage.completion_tokens == usage.completion_tokens, chunks[-1]
# The same conversation again finds its prompt in the decoder cache the first request left.
cached = chunks[-1].usage.prompt_tokens_details.cached_tokens
assert cached == usage.prompt_tokens - 1, chunks[-1].usage
limited = client.chat.completions.create(model=chat_model, messages=question, temperature=0, max_tokens=2)
assert limited.choices[0].finish_reason == "length" and limited.usage.completion_tokens == 2, limited


class Cat(BaseModel):
    name: str
    age: int = Field(ge=1, le=20)
    colors: list[Literal["black", "white", "orange"]] = Field(min_length=1, max_length=2)


parsed = client.chat.completions.parse(
    model=chat_model, messages=[{"role": "user", "content": "Describe a cat."}], response_format=Cat,
    temperature=0, max_tokens=80,
)
cat = parsed.choices[0].message.parsed
assert isinstance(cat, Cat) and 1 <= cat.age <= 20 and 1 <= len(cat.colors) <= 2, parsed
# A request this server cannot honour is refused in OpenAI's shape (BadRequestError).
try:
    client.chat.completions.create(model=chat_model, messages=question, n=2)
    raise SystemExit("error: n=2 was accepted")
except Exception as error:  # openai.BadRequestError
    assert type(error).__name__ == "BadRequestError", repr(error)

# Tool calls: a required call comes back as tool_calls whose arguments parse and follow the
# function's schema; the follow-up with the tool's output (role "tool") gets a text answer.
weather = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
    },
}
asked = [{"role": "user", "content": "What is the weather in Paris?"}]
called = client.chat.completions.create(
    model=chat_model, messages=asked, tools=[weather], tool_choice="required", temperature=0, max_tokens=40
)
assert called.choices[0].finish_reason == "tool_calls", called.choices[0]
call = called.choices[0].message.tool_calls[0]
assert call.type == "function" and call.function.name == "get_weather", call
arguments = json.loads(call.function.arguments)
assert set(arguments) == {"city", "unit"} and arguments["unit"] in ("celsius", "fahrenheit"), arguments
followed = client.chat.completions.create(
    model=chat_model,
    messages=asked + [called.choices[0].message, {"role": "tool", "tool_call_id": call.id, "content": "18 C, sunny"}],
    tools=[weather], temperature=0, max_tokens=24,
)
assert followed.choices[0].finish_reason in ("stop", "length") and followed.choices[0].message.content, followed

print(
    f"chat: {chat_model}: create whole and streamed agree ({usage.completion_tokens} tokens, "
    f"{cached} of {usage.prompt_tokens} prompt tokens cached the second time, "
    f"{streamed!r}); parse -> {cat!r}; tool call {call.function.name}({call.function.arguments}) -> "
    f"{followed.choices[0].message.content!r}"
)
