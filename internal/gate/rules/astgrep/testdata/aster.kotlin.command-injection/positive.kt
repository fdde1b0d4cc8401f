class Tools {
    fun ping(host: String): Process =
        // ruleid: aster.kotlin.command-injection
        Runtime.getRuntime().exec("ping -c 1 $host")

    fun archive(name: String): Process =
        // ruleid: aster.kotlin.command-injection
        ProcessBuilder("sh", "-c", "tar czf " + name + ".tgz data").start()
}
