using System.Diagnostics;

public class Tools
{
    public Process Ping(string host)
    {
        // ruleid: aster.csharp.command-injection
        return Process.Start("cmd.exe", "/c ping -n 1 " + host);
    }

    public Process Archive(string name)
    {
        // ruleid: aster.csharp.command-injection
        var psi = new ProcessStartInfo
        {
            FileName = "/bin/sh",
            Arguments = $"-c \"tar czf {name}.tgz data\"",
        };
        return Process.Start(psi);
    }
}
