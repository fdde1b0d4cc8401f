import subprocess

import graphene


def run(cmd):
    return subprocess.check_output(cmd, shell=True, text=True)  # taint: command-injection


class Query(graphene.ObjectType):
    lookup = graphene.String(host=graphene.String())

    def resolve_lookup(self, info, host):
        return run("host " + host)
