<?php
function find_user(PDO $db, $id) {
    $st = $db->prepare("SELECT * FROM users WHERE id = ?");
    $st->execute([$id]);
    return $st->fetch();
}

function all_users($conn) {
    return mysqli_query($conn, 'SELECT * FROM users ORDER BY name');
}

function log_it($log, $name) {
    $log->info("select from menu: $name");
}
