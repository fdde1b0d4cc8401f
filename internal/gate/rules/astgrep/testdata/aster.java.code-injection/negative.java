import javax.script.ScriptEngine;

class Calc {
    Object calc(ScriptEngine engine, int n) throws Exception {
        engine.put("n", n);
        return engine.eval("n * 2");
    }

    Object field(org.springframework.expression.ExpressionParser parser, String name) {
        return parser.parseExpression("user.name").getValue();
    }
}
