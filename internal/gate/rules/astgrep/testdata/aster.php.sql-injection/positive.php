<?php
function find_user($db, $id) {
    // ruleid: aster.php.sql-injection
    return $db->query("SELECT * FROM users WHERE id = '$id'");
}

function delete_user($conn) {
    // ruleid: aster.php.sql-injection
    $sql = "DELETE FROM users WHERE name = '" . $_POST['name'] . "'";
    mysqli_query($conn, $sql);
}

function by_email($email) {
    // ruleid: aster.php.sql-injection
    return DB::select(sprintf("SELECT * FROM users WHERE email = '%s'", $email));
}
