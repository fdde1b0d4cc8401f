const { exec, spawn } = require("child_process");
const cp = require("node:child_process");

function ping(req, res) {
    // ruleid: aster.js.command-injection
    exec("ping -c 1 " + req.query.host, (err, out) => res.send(out));
}

function archive(name) {
    // ruleid: aster.js.command-injection
    cp.execSync(`tar czf ${name}.tgz data`);
}

function run(req) {
    const cmd = req.body.cmd;
    // ruleid: aster.js.command-injection
    spawn(cmd, [], { shell: true });
}
