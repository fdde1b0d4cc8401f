// Environment variables that exist to name the program the user wants run
// ($EDITOR, $PAGER, $GIT_PAGER...): running them is their purpose.
const { execSync, spawnSync } = require("child_process");

const editor = process.env.EDITOR || "vi";
execSync(editor + " notes.txt", { stdio: "inherit" });

const pager = process.env["GIT_PAGER"] || "less";
spawnSync(pager, { shell: true, input: "log" });

// any other variable in a shell command is still reported
const flags = process.env.BUILD_FLAGS || "";
execSync("make " + flags); // taint: command-injection
