// Query values that cannot become operators.
const express = require("express");
const Todo = require("./user-model");

const app = express();

app.delete("/todo", async (req, res) => {
  await Todo.deleteOne({ _id: { $eq: req.body.id } });
  res.json({ ok: true });
});

app.get("/todo/:id", async (req, res) => {
  res.json(await Todo.findOne({ _id: req.params.id }));
});

app.post("/todo/:id", async (req, res) => {
  const todo = await Todo.findById(req.params.id);
  await todo.update({ title: req.body.title });
  res.json(todo);
});
