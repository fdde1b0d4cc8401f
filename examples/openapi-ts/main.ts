// aster-openapi-ts calls Aster's sandbox API through types that
// openapi-typescript generates from /openapi.json and the openapi-fetch
// client, as an integrator would. scripts/test-clients.sh generates
// aster.d.ts beside this file, type-checks it strictly and runs it on a real
// server:
//
//   npx openapi-typescript aster-openapi.json -o aster.d.ts
//   npx tsc -p . && node main.js http://127.0.0.1:8080 TOKEN
//
// It runs a snippet with /v1/execute, a pytest suite with /v1/test, a request
// the server refuses, whose typed error keeps its code and message, and an
// asynchronous run (/v1/runs) read back by id.
import createClient from "openapi-fetch";
import type { paths } from "./aster";

async function main(): Promise<void> {
  const [server = "http://127.0.0.1:8080", token = ""] = process.argv.slice(2);
  const client = createClient<paths>({
    baseUrl: server,
    headers: token ? { Authorization: `Bearer ${token}` } : {},
  });

  const ex = await client.POST("/v1/execute", {
    body: { argv: ["python3", "main.py"], files: { "main.py": "print(6 * 7)\n" } },
  });
  if (ex.error) throw new Error(`execute: ${ex.error.error.code}: ${ex.error.error.message}`);
  console.log(`execute: status=${ex.data.status} exit_code=${ex.data.exit_code} stdout=${JSON.stringify(ex.data.stdout)}`);

  const tr = await client.POST("/v1/test", {
    body: {
      setup: [],
      files: {
        "calc.py": "def add(a, b):\n    return a + b\n",
        "test_calc.py":
          "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\ndef test_wrong():\n    assert add(2, 2) == 5\n",
      },
    },
  });
  if (tr.error) throw new Error(`test: ${tr.error.error.code}: ${tr.error.error.message}`);
  console.log(`test: status=${tr.data.status} passed=${tr.data.tests.passed} failed=${tr.data.tests.failed}`);

  const bad = await client.POST("/v1/execute", { body: { argv: [] } });
  if (!bad.error || bad.response.status !== 400) throw new Error(`an empty argv: HTTP ${bad.response.status}, want 400`);
  console.log(`refused: code=${bad.error.error.code} message=${JSON.stringify(bad.error.error.message)}`);

  // /v1/runs: the same execute body, answered at once; the result is read back by id.
  const sub = await client.POST("/v1/runs", {
    params: { query: { kind: "execute" } },
    body: { argv: ["python3", "-c", "print('async')"] },
  });
  if (sub.error) throw new Error(`submit: ${sub.error.error.code}: ${sub.error.error.message}`);
  console.log(`submitted: state=${sub.data.state}`);
  const deadline = Date.now() + 120_000;
  for (;;) {
    const got = await client.GET("/v1/runs/{id}", { params: { path: { id: sub.data.id } } });
    if (got.error) throw new Error(`run ${sub.data.id}: ${got.error.error.code}: ${got.error.error.message}`);
    const run = got.data;
    if (run.state === "done" || run.state === "error") {
      if (!run.result) throw new Error(`run ${run.id} ended ${run.state} without a result`);
      console.log(`async: state=${run.state} status=${run.result.status} stdout=${JSON.stringify(run.result.stdout)}`);
      break;
    }
    if (Date.now() > deadline) throw new Error(`run ${run.id} still ${run.state}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

main().catch((err: unknown) => {
  console.error("aster-openapi-ts:", err instanceof Error ? err.message : err);
  process.exit(1);
});
