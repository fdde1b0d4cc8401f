<?php
function ping($host) {
    system("ping -c 1 " . escapeshellarg($host));
}

function uptime() {
    return shell_exec('uptime');
}
