using System.Text.Json;
using Newtonsoft.Json;

public class Receiver
{
    public User Parse(string json)
    {
        var settings = new JsonSerializerSettings { TypeNameHandling = TypeNameHandling.None };
        return JsonConvert.DeserializeObject<User>(json, settings);
    }

    public User Parse2(string json) => JsonSerializer.Deserialize<User>(json);
}
