class Tools {
    Process ping(String host) throws Exception {
        return new ProcessBuilder("ping", "-c", "1", host).start();
    }

    Process list() throws Exception {
        return Runtime.getRuntime().exec(new String[] {"ls", "-l"});
    }

    Process clean() throws Exception {
        return new ProcessBuilder("sh", "-c", "rm -rf build && mkdir build").start();
    }
}
