// A value echoed only after a named pattern that admits neither '<' nor '>'.
const express = require("express");

const app = express();
const CODE = /^[A-Z0-9._|-]+$/;

app.get("/code", (req, res) => {
  const code = req.query.code;
  if (!CODE.test(code)) {
    res.status(400).send("bad code");
    return;
  }
  res.send("<p>Your code: " + code + "</p>");
});
