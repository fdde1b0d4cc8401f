// express-mongo-sanitize required but never mounted: nothing is stripped.
const express = require("express");
const cleanMongo = require("express-mongo-sanitize");
const User = require("./user-model");

const app = express();
app.use(express.json());
const unused = cleanMongo;

app.post("/signin", async (req, res) => {
  const user = await User.findOne({ login: req.body.login }); // taint: nosql-injection
  res.json({ ok: !!user, unused: !!unused });
});
