"""Uploads a COMPAS model of N plain elements to an antikythera server (`POST /models/upload`),
for sessions whose dynamic composites expand over a model's elements (the basic_sequencer).

    upload_model.py URL NAME N

Prints one JSON line, ``{"model_id", "element_ids"}``: the id the server gave the model (its
session parameter ``model_id``) and the guid of each element, in the model's order.
"""

import json
import sys
import urllib.request
import uuid

import compas
from compas_model.elements import Element
from compas_model.models import Model


def main() -> int:
    url, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    model = Model()
    for i in range(count):
        model.add_element(Element(name=f"element {i}"))
    boundary = uuid.uuid4().hex
    body = (
        f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}.json\"\r\n"
        f"Content-Type: application/json\r\n\r\n{compas.json_dumps(model)}\r\n--{boundary}--\r\n"
    ).encode()
    request = urllib.request.Request(
        f"{url}/models/upload",
        data=body,
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        model_id = json.load(answer)["model_ids"][0]
    print(json.dumps({"model_id": model_id, "element_ids": [str(e.guid) for e in model.elements()]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
