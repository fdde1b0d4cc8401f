import javax.script.ScriptEngine;
import javax.servlet.http.HttpServletRequest;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.web.bind.annotation.RequestParam;

class Calc {
    Object calc(ScriptEngine engine, HttpServletRequest req) throws Exception {
        // ruleid: aster.java.code-injection
        return engine.eval(req.getParameter("expr"));
    }

    Object spel(@RequestParam("q") String q) {
        SpelExpressionParser parser = new SpelExpressionParser();
        // ruleid: aster.java.code-injection
        return parser.parseExpression("total * " + q).getValue();
    }
}
