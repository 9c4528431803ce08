"""A native agent that asks its model with the official `openai` client
three ways: Chat Completions streamed, Responses, Responses streamed.
Prints the tool each answer calls as one JSON line."""

import json

from openai import OpenAI

client = OpenAI()
ask = [{"role": "user", "content": json.dumps({"alert": "ALERT-7", "ticket": "T-100"})}]

names = []
for chunk in client.chat.completions.create(model="m", messages=ask, stream=True):
    for call in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
        if call.function and call.function.name:
            names.append(call.function.name)

response = client.responses.create(model="m", input=ask)
calls = [item.name for item in response.output if item.type == "function_call"]

streamed = []
with client.responses.stream(model="m", input=ask) as stream:
    for event in stream:
        pass
    final = stream.get_final_response()
    streamed = [item.name for item in final.output if item.type == "function_call"]

print(json.dumps({"chat_stream": names, "responses": calls, "responses_stream": streamed}))
