// A login name checked against a named pattern before it reaches a query,
// through the check's result held in a variable and through a helper: an
// operator object never passes the pattern.
const express = require("express");
const User = require("./user-model");

const app = express();
const HANDLE = /^[a-z0-9._|-]+@[a-z0-9.-]+$/i;

async function lookup(profile) {
  const { handle } = profile;
  return User.findOne({ handle: handle });
}

app.post("/profile", async (req, res) => {
  const handle = req.body.handle;
  const ok = HANDLE.test(handle);
  if (!ok) {
    res.status(400).send("bad handle");
  } else {
    const found = await lookup({ handle });
    res.json({ found: !!found });
  }
});
