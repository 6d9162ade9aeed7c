// Runs a program in airlock, follows its output, fetches its report.
import { readFile } from "node:fs/promises";
import { AirlockError, Client } from "../src/index.js";

const CODE = `import json, os, time
for i in range(3):
    print("step", i, flush=True)
    time.sleep(0.2)
os.makedirs("out", exist_ok=True)
json.dump({"steps": 3}, open("out/report.json", "w"))
`;

const client = await Client.create("http://127.0.0.1:7878", { tokenFile: process.argv[2] });
try {
  process.stdout.write((await client.run({ language: "python", code: "print(6 * 7)" })).stdout ?? "");
  const runId = await client.submit({
    language: "python", code: CODE, outputs: ["out/*"],
    grant: { workspace: "rw", streaming: true },
  });
  for await (const event of client.events(runId)) {
    if (event.type === "stdout") process.stdout.write("live: " + event.text());
  }
  const result = await client.wait(runId);
  console.log(result.outcome, result.exit_code);
  for (const art of await client.artifacts(result)) {
    if (art.path === "out/report.json") {
      await client.downloadArtifact(runId, art.name, "report.json");
      console.log(await readFile("report.json", "utf8"));
    }
  }
} catch (e) {
  if (!(e instanceof AirlockError)) throw e;
  console.error(`airlock: ${e.status} ${e.error}: ${e.message}`);  // typed
  process.exitCode = 1;
}
