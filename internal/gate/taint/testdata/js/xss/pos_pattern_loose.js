// A named pattern with a negated class lets markup through.
const express = require("express");

const app = express();
const LOOSE = /^[^\s]+$/;

app.get("/tag", (req, res) => {
  const tag = req.query.tag;
  if (LOOSE.test(tag)) {
    res.send("<p>Tag: " + tag + "</p>"); // taint: xss
  }
});
