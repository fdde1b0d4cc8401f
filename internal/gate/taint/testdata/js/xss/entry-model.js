// A mongoose-style model the fixtures construct.
const mongoose = require("mongoose");

module.exports = mongoose.model("Entry", new mongoose.Schema({ code: String, note: String }));
