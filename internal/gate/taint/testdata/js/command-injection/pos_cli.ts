// A command-line tool: its arguments reach a shell (a local source: a note).
import { execSync } from "child_process";

const target: string = process.argv[2];
execSync("git clone " + target); // taint: command-injection
