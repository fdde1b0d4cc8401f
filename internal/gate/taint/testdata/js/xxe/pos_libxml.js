// XML from the request parsed with entity substitution on.
const express = require("express");
const libxmljs = require("libxmljs");

const app = express();
app.use(express.text({ type: "application/xml" }));

app.post("/import", (req, res) => {
  const doc = libxmljs.parseXml(req.body, { noent: true }); // taint: xxe
  res.json({ root: doc.root().name() });
});
