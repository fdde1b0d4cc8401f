// Checks that do not keep an operator object out: a pattern that
// "[object Object]" passes, and a check of another field.
const express = require("express");
const User = require("./user-model");

const app = express();
const ANYTHING = /^[\s\S]+$/;
const HANDLE = /^[a-z0-9._|-]+@[a-z0-9.-]+$/i;

app.post("/a", async (req, res) => {
  const handle = req.body.handle;
  if (ANYTHING.test(handle)) {
    const found = await User.findOne({ handle: handle }); // taint: nosql-injection
    res.json({ found: !!found });
  }
});

app.post("/b", async (req, res) => {
  const handle = req.body.handle;
  const ok = HANDLE.test(req.body.other);
  if (ok) {
    const found = await User.findOne({ handle: handle }); // taint: nosql-injection
    res.json({ found: !!found });
  }
});
