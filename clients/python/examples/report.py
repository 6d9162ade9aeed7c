"""Runs a program in airlock, follows its output, fetches its report."""
import sys

from airlock_client import AirlockError, Client

CODE = """import json, os, time
for i in range(3):
    print("step", i, flush=True)
    time.sleep(0.2)
os.makedirs("out", exist_ok=True)
json.dump({"steps": 3}, open("out/report.json", "w"))
"""

client = Client("http://127.0.0.1:7878", token_file=sys.argv[1])
try:
    print(client.run(language="python", code="print(6 * 7)").stdout, end="")
    run_id = client.submit(language="python", code=CODE,
                           outputs=["out/*"],
                           grant={"workspace": "rw", "streaming": True})
    for event in client.events(run_id):
        if event.type == "stdout":
            print("live:", event.text, end="")
    result = client.wait(run_id)
    print(result.outcome, result.exit_code)
    for art in client.artifacts(result):
        if art.path == "out/report.json":
            client.download_artifact(run_id, art.name, "report.json")
            print(open("report.json").read())
except AirlockError as e:  # a refusal or an HTTP error, typed
    sys.exit("airlock: %s %s: %s" % (e.status, e.error, e.message))
