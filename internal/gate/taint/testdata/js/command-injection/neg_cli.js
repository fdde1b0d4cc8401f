// A terminal program running what its user types: reported as a note only
// (the user chooses the code), and nothing at all for a fixed command.
const readline = require("readline");
const { execFile } = require("child_process");

const rl = readline.createInterface({ input: process.stdin, output: process.stdout });
rl.question("host? ", (answer) => {
  execFile("host", [answer]);
  rl.close();
});
