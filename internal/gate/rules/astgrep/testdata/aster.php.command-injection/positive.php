<?php
function ping($host) {
    // ruleid: aster.php.command-injection
    system("ping -c 1 " . $host);
}

// ruleid: aster.php.command-injection
$out = shell_exec($_GET['cmd']);

function listing($dir) {
    // ruleid: aster.php.command-injection
    return `ls -l $dir`;
}
