// Shell commands built from input.
const express = require("express");
const cp = require("child_process");
const { exec, execSync, spawn } = require("child_process");
const util = require("util");

const run = util.promisify(exec);
const app = express();

app.get("/ping", (req, res) => {
  const host = req.query.host;
  exec("ping -c 1 " + host, (err, out) => res.send(out)); // taint: command-injection
});

app.get("/dig", (req, res) => {
  const out = execSync(`dig ${req.query.domain.trim()}`); // taint: command-injection
  res.type("text/plain").send(out);
});

app.post("/convert", (req, res) => {
  const args = ["-c", "convert " + req.body.file + " out.png"];
  spawn("sh", args); // taint: command-injection
  cp.spawn("convert", [req.body.file], { shell: true }); // taint: command-injection
  res.end();
});

async function archive(name) {
  const { stdout } = await run("tar czf backup.tgz " + name); // taint: command-injection
  return stdout;
}

app.post("/archive", async (req, res) => {
  res.type("text/plain").send(await archive(req.body.name));
});
