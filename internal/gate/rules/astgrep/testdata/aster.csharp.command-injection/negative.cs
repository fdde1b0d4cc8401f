using System.Diagnostics;

public class Tools
{
    public Process Ping(string host)
    {
        var psi = new ProcessStartInfo("ping");
        psi.ArgumentList.Add("-n");
        psi.ArgumentList.Add(host);
        return Process.Start(psi);
    }

    public Process Clean()
    {
        return Process.Start("cmd.exe", "/c rmdir /s /q build");
    }
}
