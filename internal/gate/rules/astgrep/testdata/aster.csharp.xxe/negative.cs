using System.Xml;

public class Import
{
    public XmlDocument Load(string path)
    {
        var settings = new XmlReaderSettings { DtdProcessing = DtdProcessing.Prohibit, XmlResolver = null };
        var doc = new XmlDocument { XmlResolver = null };
        doc.Load(XmlReader.Create(path, settings));
        return doc;
    }
}
