// A Mongoose model, as the fixtures use it.
const mongoose = require("mongoose");

module.exports = mongoose.model("User", new mongoose.Schema({ username: String, password: String }));
