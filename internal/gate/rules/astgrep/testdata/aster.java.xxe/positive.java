import javax.xml.parsers.*;
import javax.xml.stream.XMLInputFactory;
import org.w3c.dom.Document;
import java.io.InputStream;

class Import {
    Document read(InputStream body) throws Exception {
        // ruleid: aster.java.xxe
        DocumentBuilderFactory dbf = DocumentBuilderFactory.newInstance();
        return dbf.newDocumentBuilder().parse(body);
    }

    XMLInputFactory stax() {
        XMLInputFactory f = XMLInputFactory.newFactory();
        // ruleid: aster.java.xxe
        f.setProperty(XMLInputFactory.IS_SUPPORTING_EXTERNAL_ENTITIES, true);
        return f;
    }
}
