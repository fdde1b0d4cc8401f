<?php
function calc($expr) {
    // ruleid: aster.php.code-injection
    return eval('return ' . $expr . ';');
}

// ruleid: aster.php.code-injection
call_user_func($_GET['fn'], $_GET['arg']);
