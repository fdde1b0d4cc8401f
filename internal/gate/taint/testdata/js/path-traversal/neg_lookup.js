// Names checked against what exists before they reach the file system.
const fs = require("fs/promises");
const express = require("express");

const app = express();
const REPORTS = new Map([["q1", "reports/q1.txt"], ["q2", "reports/q2.txt"]]);

async function findReport(name) {
  if (REPORTS.has(name)) {
    return REPORTS.get(name);
  }
  return null;
}

app.get("/reports/:name", async (req, res) => {
  const name = req.params.name;
  let report;
  try {
    report = await findReport(name);
    if (report == null) {
      return res.status(404).end();
    }
  } catch (err) {
    return res.status(500).end();
  }
  res.type("text/plain").send(await fs.readFile("reports/" + name + ".txt"));
});

app.get("/attachment", (req, res) => {
  const file = req.query.file;
  if (!file.includes("/") && !file.includes("..")) {
    res.sendFile("/srv/files/" + file);
  }
});
