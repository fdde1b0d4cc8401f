using System.IO;
using Microsoft.AspNetCore.Mvc;

public class FilesController : Controller
{
    public IActionResult Show([FromQuery] string name)
    {
        // ruleid: aster.csharp.path-traversal
        return Content(System.IO.File.ReadAllText(Path.Combine("/srv/files", name)));
    }

    public IActionResult Raw()
    {
        var name = Request.Query["file"].ToString();
        // ruleid: aster.csharp.path-traversal
        return PhysicalFile("/srv/files/" + name, "application/octet-stream");
    }
}
