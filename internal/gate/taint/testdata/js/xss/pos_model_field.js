// The unchecked field of the same record, echoed as HTML.
const express = require("express");
const Entry = require("./entry-model");

const app = express();

app.post("/entries", async (req, res) => {
  const entry = new Entry({ code: "A1", note: req.body.note });
  await entry.save();
  res.send("<p>Saved " + entry.note + "</p>"); // taint: xss
});

const { Record } = require("tiny-records");

app.post("/records", (req, res) => {
  const rec = new Record({ code: "B2", note: req.body.note });
  return res.send("<p>Kept " + rec.note + "</p>"); // taint: xss
});
