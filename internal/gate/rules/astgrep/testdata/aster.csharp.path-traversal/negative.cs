using System.IO;
using Microsoft.AspNetCore.Mvc;

public class FilesController : Controller
{
    public IActionResult Show([FromQuery] string name)
    {
        var safe = Path.GetFileName(name);
        return Content(System.IO.File.ReadAllText(Path.Combine("/srv/files", Path.GetFileName(name))));
    }

    public IActionResult Readme() => Content(System.IO.File.ReadAllText("README.md"));
}
