using System.IO;
using System.Runtime.Serialization.Formatters.Binary;
using Newtonsoft.Json;

public class Receiver
{
    public object Read(Stream body)
    {
        // ruleid: aster.csharp.insecure-deserialization
        var f = new BinaryFormatter();
        return f.Deserialize(body);
    }

    public object Parse(string json)
    {
        var settings = new JsonSerializerSettings
        {
            // ruleid: aster.csharp.insecure-deserialization
            TypeNameHandling = TypeNameHandling.All,
        };
        return JsonConvert.DeserializeObject(json, settings);
    }
}
