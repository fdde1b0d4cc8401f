// The app mounts express-mongo-sanitize: operator keys are stripped from
// the body, query and route parameters before any handler runs.
const express = require("express");
const cleanMongo = require("express-mongo-sanitize");
const User = require("./user-model");

const app = express();
app.use(express.json());
app.use(cleanMongo());

app.post("/signin", async (req, res) => {
  const user = await User.findOne({ login: req.body.login, secret: req.body.secret });
  res.json({ ok: !!user });
});
