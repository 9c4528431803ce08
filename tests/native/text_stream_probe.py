"""A native agent that asks its model for text with the official `openai`
client's Responses stream helper, then once more without streaming.
Prints the streamed text, and each answer's status and why it is
incomplete, as one JSON line."""

import json

from openai import OpenAI

client = OpenAI()
with client.responses.stream(model="m", input="hi") as stream:
    for event in stream:
        pass
    final = stream.get_final_response()

again = client.responses.create(model="m", input="again")
print(
    json.dumps(
        {
            "streamed": final.output_text,
            "streamed_status": final.status,
            "status": again.status,
            "why": again.incomplete_details.reason if again.incomplete_details else None,
        }
    )
)
