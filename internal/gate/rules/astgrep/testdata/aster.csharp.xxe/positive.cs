using System.Xml;

public class Import
{
    public XmlDocument Load(string path)
    {
        // ruleid: aster.csharp.xxe
        var settings = new XmlReaderSettings { DtdProcessing = DtdProcessing.Parse };
        var doc = new XmlDocument();
        // ruleid: aster.csharp.xxe
        doc.XmlResolver = new XmlUrlResolver();
        doc.Load(XmlReader.Create(path, settings));
        return doc;
    }
}
